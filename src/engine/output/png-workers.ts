// PNG results composed and encoded on worker threads: on the main thread this per-pixel work was the limit on a
// GPU (bench/RESULTS.md, "Issue #26": main thread 89 % busy, GPU 19 %). The same code, so the same bytes.

import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { PngJob } from './png-job.js';
import { workerExecArgv } from '../runtime/worker-exec-argv.js';

// A worker cannot load .ts: run from the source (the tests), it runs the built entry in dist/.
const ENTRY = import.meta.url.endsWith('.ts')
  ? new URL('../../../dist/engine/output/png-worker-entry.js', import.meta.url)
  : new URL('./png-worker-entry.js', import.meta.url);

/** Workers: a quarter of the cores, 1 to 4 (each job's bands deflate on libuv's pool besides). */
export const PNG_WORKERS = Math.min(4, Math.max(1, Math.floor(availableParallelism() / 4)));

interface Pending {
  resolve: (png: Buffer) => void;
  reject: (error: Error) => void;
}

interface PngWorker {
  worker: Worker;
  pending: Map<number, Pending>;
}

const workers: PngWorker[] = [];
let nextId = 0;

/** Starts a worker; unref'd while it has no job, so an idle one never holds the process open. */
function startWorker(): PngWorker {
  const worker = new Worker(ENTRY, { execArgv: workerExecArgv(process.execArgv) });
  const entry: PngWorker = { worker, pending: new Map() };
  worker.unref();
  worker.on('message', (reply: { id: number; png?: Uint8Array; error?: string }) => {
    const job = entry.pending.get(reply.id);
    if (!job) return;
    entry.pending.delete(reply.id);
    if (entry.pending.size === 0) worker.unref();
    if (reply.png) job.resolve(Buffer.from(reply.png.buffer, reply.png.byteOffset, reply.png.byteLength));
    else job.reject(new Error(reply.error ?? 'the PNG worker failed'));
  });
  const fail = (error: Error) => {
    const index = workers.indexOf(entry);
    if (index !== -1) workers.splice(index, 1);
    for (const job of entry.pending.values()) job.reject(error);
    entry.pending.clear();
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the PNG worker exited with code ${code}`)));
  return entry;
}

/** The least busy worker, a new one while fewer than PNG_WORKERS run. */
function pickWorker(): PngWorker {
  const idle = workers.find((w) => w.pending.size === 0);
  if (idle) return idle;
  if (workers.length < PNG_WORKERS) {
    const started = startWorker();
    workers.push(started);
    return started;
  }
  return workers.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
}

/** The PNG of composeAndEncodePng(job), made on a worker thread (the pixels and mask are copied to it). */
export function encodePngOnWorker(job: PngJob): Promise<Buffer> {
  const target = pickWorker();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    target.pending.set(id, { resolve, reject });
    target.worker.ref();
    target.worker.postMessage({ ...job, id });
  });
}
