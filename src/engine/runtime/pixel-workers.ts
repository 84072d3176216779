// The per-pixel work of each image (pixel-jobs.ts) on worker threads: on the main thread it was the limit on a GPU
// (bench/RESULTS.md, "Issue #26": main thread 89 % busy, GPU 19 %). The same code, so the same bytes.

import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { RmbgError } from '../../api/errors.js';
import { builtModule } from '../../platform/built-module.js';
import type { TensorJob } from '../output/pixel-operations.js';
import type { PixelJobName, PixelJobOutput, PixelWork } from './pixel-jobs.js';
import { LEND_FROM_BYTES, LENT } from './lent-buffers.js';
import { workerExecArgv } from './worker-exec-argv.js';

const ENTRY = builtModule('engine/runtime/pixel-worker-entry.js');

/** Workers: a quarter of the cores, 2 to 4 (a PNG's bands deflate on libuv's pool besides). At least 2, so one
 * image's tensor never waits behind another's compose: with 1, a 2-core folder ran slower than with the work on the
 * main thread (bench/RESULTS.md, "Issue #26, round 3"). */
export const PIXEL_WORKERS = Math.min(4, Math.max(2, Math.floor(availableParallelism() / 4)));

/** A job as a worker gets it: `lent` are the buffers of its input to move back with the reply. */
export interface PixelRequest {
  id: number;
  name: PixelJobName;
  input: unknown;
  lent: ArrayBuffer[];
}

/** A worker's answer to job `id`: its result, or its error's message; `lent`: the request's buffers, moved back
 * (less any the result views). */
export interface PixelReply {
  id: number;
  result?: unknown;
  error?: string;
  lent: ArrayBuffer[];
}

interface Pending {
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
}

interface PixelWorker {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Takes no new job; ends once its pending jobs are answered. */
  retiring?: boolean;
}

/** The longest one job may run (a 12 MP HEIC decodes in about 1.5 s, a 10 MP PNG encodes in less): past it the job
 * fails and its worker is stopped, which is safe here (JavaScript, WebAssembly and zlib only: no sharp, no ORT). */
export const PIXEL_JOB_LIMIT_MS = 60_000;

/** Jobs whose worker ends after them: libheif's and LibRaw's WebAssembly heaps grow to the largest image decoded
 * (about 200 MB for a 12 MP HEIC, 14 bytes a pixel for a RAW) and never shrink, so the worker that decoded one
 * goes and its memory with it; starting another costs ms. */
const RETIRES_WORKER: ReadonlySet<PixelJobName> = new Set(['heic', 'raw']);

const workers: PixelWorker[] = [];
let nextId = 0;

/** Where a job writes its result into a lent buffer rather than a new one: the model's tensor, handed back by the
 * inference worker (inference-worker-entry.ts) once the model has read it. */
const LENT_OUTPUT: Partial<Record<PixelJobName, (input: TensorJob) => number>> = {
  tensor: ({ pixelCount }) => pixelCount * 3,
};

/** `value` with its large byte arrays, and its plain objects' (two levels: a job's mask), replaced by lent copies,
 * whose buffers go in `lent`; an array whose buffer is in `moved` moves as it is. An input array that large which the
 * caller does not give up (sharp's pixels) is copied into a lent buffer rather than cloned: a clone costs a new buffer
 * on both threads, each a fresh mapping under fixed malloc thresholds; the copy is the one the clone made. */
function withLentArrays(value: unknown, moved: ReadonlySet<ArrayBufferLike>, lent: ArrayBuffer[], depth = 0): unknown {
  if (value instanceof Uint8Array) {
    if (value.byteLength < LEND_FROM_BYTES || moved.has(value.buffer)) return value;
    const copy = LENT.bytes(value.byteLength);
    copy.set(value);
    lent.push(copy.buffer as ArrayBuffer);
    return copy;
  }
  if (depth >= 2 || typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype)
    return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) => [key, withLentArrays(field, moved, lent, depth + 1)]),
  );
}

/** Starts a worker; unref'd while it has no job, so an idle one never holds the process open. */
function startWorker(): PixelWorker {
  const worker = new Worker(ENTRY, { execArgv: workerExecArgv(process.execArgv) });
  const entry: PixelWorker = { worker, pending: new Map() };
  worker.unref();
  worker.on('message', (reply: PixelReply) => {
    for (const buffer of reply.lent) LENT.give(buffer);
    const job = entry.pending.get(reply.id);
    if (!job) return;
    entry.pending.delete(reply.id);
    if (entry.pending.size === 0) worker.unref();
    if (entry.retiring && entry.pending.size === 0) void worker.terminate();
    if (reply.error === undefined) job.resolve(reply.result);
    else job.reject(new Error(reply.error));
  });
  const fail = (error: Error) => {
    const index = workers.indexOf(entry);
    if (index !== -1) workers.splice(index, 1);
    for (const job of entry.pending.values()) job.reject(error);
    entry.pending.clear();
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the pixel worker exited with code ${code}`)));
  return entry;
}

/** No new job goes to `entry`; it ends after the jobs it has (the message handler terminates it). */
function retire(entry: PixelWorker): void {
  entry.retiring = true;
  const index = workers.indexOf(entry);
  if (index !== -1) workers.splice(index, 1);
}

/** The least busy worker, a new one while fewer than PIXEL_WORKERS run. */
function pickWorker(): PixelWorker {
  const idle = workers.find((w) => w.pending.size === 0);
  if (idle) return idle;
  if (workers.length < PIXEL_WORKERS) {
    const started = startWorker();
    workers.push(started);
    return started;
  }
  return workers.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
}

/** A job run on a pixel worker; the buffers in `transfer` move there (detached here), large arrays are lent
 * (withLentArrays), the rest is copied. Its result's arrays come back moved; a worker that dies rejects its jobs. */
export const onPixelWorker: PixelWork = <Name extends PixelJobName>(
  name: Name,
  input: unknown,
  transfer: ArrayBuffer[] = [],
) => {
  const target = pickWorker();
  if (RETIRES_WORKER.has(name)) retire(target);
  const id = nextId++;
  return new Promise<PixelJobOutput<Name>>((resolve, reject) => {
    const timer = setTimeout(() => {
      if (!target.pending.delete(id)) return;
      reject(
        new RmbgError(
          'processing_failed',
          `the image's pixel work (${name}) ran over ${PIXEL_JOB_LIMIT_MS / 1000} s; its worker was stopped`,
        ),
      );
      retire(target);
      void target.worker.terminate(); // its other jobs fail with it ('exit')
    }, PIXEL_JOB_LIMIT_MS);
    timer.unref();
    const settle =
      <T>(done: (value: T) => void) =>
      (value: T) => {
        clearTimeout(timer);
        done(value);
      };
    target.pending.set(id, { resolve: settle(resolve as (result: unknown) => void), reject: settle(reject) });
    target.worker.ref();
    const lent: ArrayBuffer[] = [];
    const lending = withLentArrays(input, new Set(transfer), lent) as Record<string, unknown>;
    const outputLength = LENT_OUTPUT[name]?.(input as TensorJob);
    if (outputLength !== undefined) {
      lending.into = LENT.floats(outputLength);
      lent.push((lending.into as Float32Array).buffer as ArrayBuffer);
    }
    target.worker.postMessage({ id, name, input: lending, lent } satisfies PixelRequest, [...transfer, ...lent]);
  });
};
