// Inference on a worker thread. onnxruntime-node runs a model synchronously on the thread that calls it (its
// backend's run() is a setImmediate around the native call), so on the main thread one image held the whole
// process for seconds: /healthz, other uploads, timeouts and the JS work of the other photo in a batch all
// waited. WorkerSession has what the pipeline uses of a ModelSession (model, inputSize, run, release) and runs
// the ModelSession on one worker thread (inference-worker-entry.ts), the only place the model is loaded.
// Tensors cross the boundary by transfer, not by copy; RmbgErrors cross as code + message.

import { Worker } from 'node:worker_threads';
import { RmbgError, type ErrorCode } from '../api/errors.js';
import { gpuTurn } from './gpu-queue.js';
import { inputSizeOf } from './model-contract.js';
import type { ResolvedModel } from './model-registry.js';
import type { MaskPlane, SessionOptions } from './model-session.js';
import { workerExecArgv } from './worker-exec-argv.js';

/** An RmbgError as it crosses threads (structured cloning keeps neither its class nor its code). */
export interface WireError {
  code: ErrorCode;
  message: string;
}

export interface WorkerStart {
  model: ResolvedModel;
  options: SessionOptions;
}

export type ToWorker =
  | { type: 'verified'; ok: boolean }
  | { type: 'run'; id: number; input: Float32Array }
  | { type: 'release' };

export type FromWorker =
  | { type: 'loaded' }
  | { type: 'load-failed'; error: WireError }
  | { type: 'result'; id: number; plane: MaskPlane }
  | { type: 'failed'; id: number; error: WireError };

// Built, the entry is the .js beside this file. Run from the TypeScript source (the tests), a worker cannot
// load .ts, so it runs the built entry in dist/ (the tests' globalSetup builds it first).
const ENTRY = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/engine/inference-worker-entry.js', import.meta.url)
  : new URL('./inference-worker-entry.js', import.meta.url);

interface PendingRun {
  resolve(plane: MaskPlane): void;
  reject(error: Error): void;
  /** The worker the run was sent to. */
  worker: Worker;
}

export interface WorkerLimits {
  /**
   * A run on the CPU that has not answered after this long fails, and its worker is set aside: the next run
   * starts another. Default: no limit. A GPU run is never set aside: two sessions on one GPU at once crash.
   */
  runTimeoutMs?: number;
}

export class WorkerSession {
  /** The worker whose model is loaded (or loading); undefined once it stopped, so the next run starts another. */
  private worker: Promise<Worker> | undefined;
  private readonly pending = new Map<number, PendingRun>();
  private nextId = 0;
  private released = false;
  /** The loaded worker behind `worker`, once it has loaded. */
  private current: Worker | undefined;
  /** A GPU session's every load, run and release waits for its turn in the process's one GPU queue. */
  private readonly turn: <T>(work: () => Promise<T>) => Promise<T>;

  private constructor(
    readonly model: ResolvedModel,
    private readonly options: SessionOptions,
    private readonly limits: WorkerLimits,
  ) {
    this.turn = options.provider === 'webgpu' ? gpuTurn : (work) => work();
  }

  /** As ModelSession.load, with the session on a worker thread; a failed load rejects with its RmbgError. */
  static async load(
    model: ResolvedModel,
    options: SessionOptions = {},
    verified: Promise<unknown> = Promise.resolve(),
    limits: WorkerLimits = {},
  ): Promise<WorkerSession> {
    const session = new WorkerSession(model, options, limits);
    await session.turn(() => session.started(verified));
    return session;
  }

  get inputSize(): { width: number; height: number } {
    return inputSizeOf(this.model.contract);
  }

  /**
   * Runs the model on a planar CHW float tensor; resolves to the mask plane. The input's buffer moves to the
   * worker (it is detached here afterwards). Runs are serialised by the worker's ModelSession.
   */
  async run(input: Float32Array): Promise<MaskPlane> {
    if (this.released) throw new RmbgError('processing_failed', `model ${this.model.name} was released`);
    return this.turn(() => this.runNow(input));
  }

  private async runNow(input: Float32Array): Promise<MaskPlane> {
    // The weights were verified when the engine was created; a worker that died is replaced here.
    const worker = await this.started(Promise.resolve());
    const id = this.nextId++;
    const result = new Promise<MaskPlane>((resolve, reject) => this.pending.set(id, { resolve, reject, worker }));
    const whole =
      input.byteOffset === 0 && input.byteLength === input.buffer.byteLength && input.buffer instanceof ArrayBuffer;
    const sent = whole ? input : input.slice();
    worker.ref(); // a run in flight keeps the process alive, as it did on the main thread
    worker.postMessage({ type: 'run', id, input: sent } satisfies ToWorker, [sent.buffer as ArrayBuffer]);
    const { runTimeoutMs } = this.limits;
    if (runTimeoutMs === undefined || this.options.provider === 'webgpu') return result;
    // A run that never answers (a hung kernel, a deadlock) would hold every later run of this session.
    const timer = setTimeout(
      () => this.setAside(worker, `a run took longer than ${runTimeoutMs / 1000} s`),
      runTimeoutMs,
    );
    return result.finally(() => clearTimeout(timer));
  }

  /**
   * Fails the runs of `worker` and lets the next run start another worker. Not terminate(): ending a worker
   * while onnxruntime is inside a run ends the whole process (a fatal N-API error). Asked to release, the
   * worker finishes what it holds and exits by itself; it no longer keeps the process alive.
   */
  private setAside(worker: Worker, why: string): void {
    if (this.current === worker) {
      this.worker = undefined;
      this.current = undefined;
    }
    this.failRuns(
      worker,
      new RmbgError(
        'processing_failed',
        `the inference worker was set aside: ${why} while running model ${this.model.name}`,
      ),
    );
    worker.postMessage({ type: 'release' } satisfies ToWorker);
    worker.unref();
  }

  private failRuns(worker: Worker, error: RmbgError): void {
    for (const [id, run] of this.pending) {
      if (run.worker !== worker) continue;
      this.pending.delete(id);
      run.reject(error);
    }
  }

  /** Waits for the runs in flight, releases the session and ends the worker; later runs fail. */
  async release(): Promise<void> {
    this.released = true;
    await this.turn(() => this.releaseNow());
  }

  private async releaseNow(): Promise<void> {
    const current = this.worker;
    const worker = await current?.catch(() => undefined);
    if (!worker || this.worker !== current) return; // never loaded, or already stopped
    worker.ref();
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage({ type: 'release' } satisfies ToWorker);
    await exited;
  }

  private started(verified: Promise<unknown>): Promise<Worker> {
    this.worker ??= this.spawn(verified);
    return this.worker;
  }

  private spawn(verified: Promise<unknown>): Promise<Worker> {
    const worker = new Worker(ENTRY, {
      workerData: { model: this.model, options: this.options } satisfies WorkerStart,
      execArgv: workerExecArgv(process.execArgv),
    });
    void verified.then(
      () => worker.postMessage({ type: 'verified', ok: true } satisfies ToWorker),
      () => worker.postMessage({ type: 'verified', ok: false } satisfies ToWorker),
    );
    let crash = '';
    const loaded: Promise<Worker> = new Promise((resolve, reject) => {
      worker.on('message', (message: FromWorker) => {
        if (message.type === 'loaded') {
          this.current = worker;
          resolve(worker);
          this.unrefWhenIdle(worker);
        } else if (message.type === 'load-failed') {
          reject(new RmbgError(message.error.code, message.error.message));
          void worker.terminate();
        } else {
          const run = this.pending.get(message.id);
          this.pending.delete(message.id);
          if (message.type === 'result') run?.resolve(message.plane);
          else run?.reject(new RmbgError(message.error.code, message.error.message));
          if (worker === this.current) this.unrefWhenIdle(worker);
        }
      });
      // An uncaught exception or out-of-memory in the worker; 'exit' follows.
      worker.on('error', (error) => (crash = `: ${error.message}`));
      worker.once('exit', (exitCode) => {
        if (this.worker === loaded) this.worker = undefined;
        if (this.current === worker) this.current = undefined;
        const why = `the inference worker stopped (exit code ${exitCode}${crash})`;
        reject(new RmbgError('model_unavailable', `cannot load model ${this.model.name}: ${why}`));
        this.failRuns(worker, new RmbgError('processing_failed', `${why} while running model ${this.model.name}`));
      });
    });
    loaded.catch(() => undefined); // a load nobody awaits (a run's caller gets it) must not be unhandled
    return loaded;
  }

  /** An idle worker does not keep the process alive: a CLI that ends without release() still exits. */
  private unrefWhenIdle(worker: Worker): void {
    if (this.pending.size === 0 && !this.released) worker.unref();
  }
}
