// The inference worker thread (inference-worker.ts): the only place the model is loaded.

import { parentPort, workerData } from 'node:worker_threads';
import { toRmbgError, type ErrorCode } from '../../api/errors.js';
import type { FromWorker, ToWorker, WireError, WorkerStart } from './inference-worker.js';
import { ModelSession } from '../model/model-session.js';
import { sendStdoutToStderr } from './worker-stdout.js';

if (!parentPort) throw new Error('inference-worker-entry.js runs only as a worker thread (inference-worker.ts)');
sendStdoutToStderr();
const port = parentPort;
const { model, options } = workerData as WorkerStart;

function post(message: FromWorker, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

function wire(error: unknown, fallback: ErrorCode): WireError {
  const rmbgError = toRmbgError(error, fallback);
  return { code: rmbgError.code, message: rmbgError.message };
}

// The main thread checks the weights meanwhile and says whether they passed; the graph cache needs the verdict.
let verdict: (ok: boolean) => void = () => undefined;
const verified = new Promise<void>((resolve, reject) => {
  verdict = (ok) => (ok ? resolve() : reject(new Error('the weights failed their check')));
});
verified.catch(() => undefined);

const loading = ModelSession.load(model, options, verified);
loading.then(
  () => post({ type: 'loaded' }),
  (error: unknown) => post({ type: 'load-failed', error: wire(error, 'model_unavailable') }),
);

/** Set aside (its runs already failed on the main thread): the runs queued behind the one in the model are not run,
 * so a worker set aside behind a hung run does not keep the GPU for answers nobody waits for. */
let dropQueued = false;

async function run(id: number, input: Float32Array): Promise<void> {
  try {
    const plane = await (await loading).run(input, () => !dropQueued);
    post({ type: 'result', id, plane, spent: input }, [plane.data.buffer as ArrayBuffer, input.buffer as ArrayBuffer]);
  } catch (error) {
    post({ type: 'failed', id, error: wire(error, 'processing_failed') });
  }
}

async function release(): Promise<void> {
  await (await loading).release();
  port.close(); // nothing left on this thread's loop: the worker exits
}

port.on('message', (message: ToWorker) => {
  if (message.type === 'verified') verdict(message.ok);
  else if (message.type === 'run') void run(message.id, message.input);
  else {
    dropQueued = message.dropQueued === true;
    void release();
  }
});
