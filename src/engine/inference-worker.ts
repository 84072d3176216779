// The ModelSession on a worker thread: onnxruntime blocks the thread that runs it, which held the whole process
// for seconds (bench/RESULTS.md, "Inference on a worker thread").

import { Worker } from 'node:worker_threads';
import { RmbgError, type ErrorCode } from '../api/errors.js';
import { claimGpu, releaseGpu } from './gpu-claim.js';
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

// A worker cannot load .ts: run from the source (the tests), it runs the built entry in dist/.
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
  /** A CPU run unanswered after this long fails and its worker is set aside (default: none); never on the GPU. */
  runTimeoutMs?: number;
}

export class WorkerSession {
  /** Resolves to the worker once its model is loaded; undefined once it stopped, so the next run starts another. */
  private workerReady: Promise<Worker> | undefined;
  private readonly pending = new Map<number, PendingRun>();
  private nextId = 0;
  private released = false;
  /** Whether this session counts among its copy's users of the process's GPU. */
  private holdsGpu = false;
  /** What `workerReady` resolved to, while that worker runs. */
  private loadedWorker: Worker | undefined;
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
    if (options.provider === 'webgpu') {
      const refused = await claimGpu();
      if (refused !== undefined)
        throw new RmbgError('device_unavailable', `cannot load model ${model.name} on the GPU: ${refused}`);
      session.holdsGpu = true;
    }
    try {
      await session.turn(() => session.ensureWorker(verified));
    } catch (error) {
      session.giveBackGpu();
      throw error;
    }
    return session;
  }

  get inputSize(): { width: number; height: number } {
    return inputSizeOf(this.model.contract);
  }

  /** Runs the model on a planar CHW float tensor; the input's buffer moves to the worker (detached here). */
  async run(input: Float32Array): Promise<MaskPlane> {
    if (this.released) throw new RmbgError('processing_failed', `model ${this.model.name} was released`);
    return this.turn(() => this.runNow(input));
  }

  private async runNow(input: Float32Array): Promise<MaskPlane> {
    // The weights were verified when the engine was created; a worker that died is replaced here.
    const worker = await this.ensureWorker(Promise.resolve());
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

  /** Fails `worker`'s runs and lets the next run start another; asked to release, it exits by itself when done.
   * Not terminate(): ending a worker inside an onnxruntime run ends the whole process (a fatal N-API error). */
  private setAside(worker: Worker, why: string): void {
    if (this.loadedWorker === worker) {
      this.workerReady = undefined;
      this.loadedWorker = undefined;
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
    try {
      await this.turn(() => this.releaseNow());
    } finally {
      this.giveBackGpu();
    }
  }

  /** This session's share of the process's GPU claim (gpu-claim.ts), given back once. */
  private giveBackGpu(): void {
    if (!this.holdsGpu) return;
    this.holdsGpu = false;
    releaseGpu();
  }

  private async releaseNow(): Promise<void> {
    const ready = this.workerReady;
    const worker = await ready?.catch(() => undefined);
    if (!worker || this.workerReady !== ready) return; // never loaded, or already stopped
    worker.ref();
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage({ type: 'release' } satisfies ToWorker);
    await exited;
  }

  /** The worker, started first when there is none. */
  private ensureWorker(verified: Promise<unknown>): Promise<Worker> {
    this.workerReady ??= this.spawn(verified);
    return this.workerReady;
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
          this.loadedWorker = worker;
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
          if (worker === this.loadedWorker) this.unrefWhenIdle(worker);
        }
      });
      // An uncaught exception or out-of-memory in the worker; 'exit' follows.
      worker.on('error', (error) => (crash = `: ${error.message}`));
      worker.once('exit', (exitCode) => {
        if (this.workerReady === loaded) this.workerReady = undefined;
        if (this.loadedWorker === worker) this.loadedWorker = undefined;
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
