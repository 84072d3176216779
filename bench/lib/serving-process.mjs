// Which process of a spawned `rmbg serve` serves: on Node 20, which cannot restart itself with fixed malloc
// thresholds, the spawned one runs the server in one child process (bin/malloc-tuning.js) and only passes signals on.
// What is read of the server (its memory) or done to it alone (SIGSTOP) is the serving one's.
import { readFileSync } from 'node:fs';

/** The pid of the process serving for the spawned `pid`: its one child running rmbg, else `pid` itself (Linux). */
export function servingPid(pid) {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  const rmbg = children.filter((child) => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, 'utf8')
        .split('\0')
        .some((arg) => arg.endsWith('rmbg.js'));
    } catch {
      return false; // gone since
    }
  });
  return rmbg.length === 1 ? Number(rmbg[0]) : pid;
}
