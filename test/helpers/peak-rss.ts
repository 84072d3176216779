// Samples a process's resident memory (Linux /proc) while a test runs, to bound how much an attack grows it.

import { readFileSync } from 'node:fs';

export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}

/** Polls every `everyMs` until stop() is called; resolves with the largest RSS seen. */
export function samplePeakRss(pid: number, everyMs = 20): { stop(): number } {
  let peak = rssBytes(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssBytes(pid));
    } catch {
      // The process exited: the peak so far stands.
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}
