// The ModelSession on a worker thread: onnxruntime blocks the thread that runs it, which held the whole process
// for seconds (bench/RESULTS.md, "Inference on a worker thread").

import { Worker } from 'node:worker_threads';
import { RmbgError, type ErrorCode } from '../../api/errors.js';
import { builtModule } from '../../platform/built-module.js';
import { claimGpu, releaseGpu } from './gpu-claim.js';
import { gpuTurn } from './gpu-queue.js';
import { inputSizeOf } from '../model/model-contract.js';
import type { ResolvedModel } from '../model/model-registry.js';
import type { MaskPlane, SessionOptions } from '../model/model-session.js';
import { LENT } from './lent-buffers.js';
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
  /** `dropQueued`: the runs queued behind the one in the model are not run (a worker set aside). */
  | { type: 'release'; dropQueued?: boolean };

export type FromWorker =
  | { type: 'loaded' }
  | { type: 'load-failed'; error: WireError }
  /** `spent`: the run's input, which the model has read, moved back to be lent again (lent-buffers.ts). */
  | { type: 'result'; id: number; plane: MaskPlane; spent: Float32Array }
  | { type: 'failed'; id: number; error: WireError };

const ENTRY = builtModule('engine/runtime/inference-worker-entry.js');

interface PendingRun {
  resolve(plane: MaskPlane): void;
  reject(error: Error): void;
  /** The worker the run was sent to. */
  worker: Worker;
}

export interface WorkerLimits {
  /** A run unanswered this long after it was asked for (its wait for the GPU included) fails; one in the model
   * then has its worker set aside and the session is broken until a fresh worker answers. Default: none. */
  runTimeoutMs?: number;
}

/** Workers set aside and still running (each holds a model in memory); past this, runs fail until one returns. */
const MAX_SET_ASIDE = 2;

/** A GPU session's runs in its worker at once: one in the model and the next waiting there, so the GPU never waits
 * for the main thread to take an answer and send the next run (busy with other photos' pixels, it is slow to). */
const GPU_RUNS_IN_WORKER = 2;

/** Workers set aside by this copy's sessions that have not returned yet. */
let runningSetAside = 0;

/** Whether a worker set aside is still in its run: the process cannot exit normally meanwhile, as Node waits for
 * every worker thread, and one stuck in native code (a hung GPU) never comes back. */
export function workersSetAsideRunning(): number {
  return runningSetAside;
}

export class WorkerSession {
  /** Resolves to the worker once its model is loaded; undefined once it stopped, so the next run starts another. */
  private workerReady: Promise<Worker> | undefined;
  private readonly pending = new Map<number, PendingRun>();
  private nextId = 0;
  private released = false;
  /** Whether this session counts among its copy's users of the process's GPU. */
  private holdsGpu = false;
  /** Workers set aside after a run past its limit, until they exit, with the exit awaited. */
  private readonly setAsideWorkers = new Map<Worker, Promise<unknown>>();
  /** Why the session is broken (a run past its limit), until a fresh worker answers a run. */
  private brokenBy: string | undefined;
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

  /** Why the session is broken (a run went past its limit), until a fresh worker has answered; else undefined. */
  get broken(): string | undefined {
    return this.brokenBy;
  }

  /** One run on a blank tensor of the model's input size: shaders compiled, a device proven, a run timed. */
  runBlank(): Promise<MaskPlane> {
    const { width, height } = this.inputSize;
    return this.run(new Float32Array(3 * width * height));
  }

  /** Runs the model on a planar CHW float tensor; the input's buffer moves to the worker (detached here). */
  async run(input: Float32Array): Promise<MaskPlane> {
    if (this.released) throw new RmbgError('processing_failed', `model ${this.model.name} was released`);
    const { runTimeoutMs } = this.limits;
    if (runTimeoutMs === undefined) return this.runTurn(async () => (await this.send(input)).result);
    return new Promise<MaskPlane>((resolve, reject) => {
      let inModel: Worker | undefined;
      let expired = false;
      // A run that never answers (a hung kernel or GPU, a deadlock) would hold every later run of this session.
      const timer = setTimeout(() => {
        expired = true;
        if (inModel) this.setAside(inModel, `a run took longer than ${runTimeoutMs / 1000} s`);
        else
          reject(
            new RmbgError(
              'processing_failed',
              `model ${this.model.name} did not get to run within ${runTimeoutMs / 1000} s: ` +
                `the runs before it held it${this.brokenBy ? ` (${this.brokenBy})` : ''}`,
            ),
          );
      }, runTimeoutMs);
      this.runTurn(async () => {
        if (expired) return; // its caller has given up: its turn is skipped
        // Expired while a worker started, it is not sent: it would run with no watchdog left.
        const sent = await this.send(input, () => expired);
        inModel = sent.worker;
        await sent.result.then(resolve, reject);
        // A GPU run set aside still holds the GPU: the next one waits until it has returned (two at once crash).
        if (this.options.provider === 'webgpu') await this.setAsideWorkers.get(sent.worker);
      })
        .catch(reject)
        .finally(() => clearTimeout(timer));
    });
  }

  /** A run's turn: on the GPU, shared by this session's runs (GPU_RUNS_IN_WORKER), except behind a worker set aside,
   * which may still be in the GPU: a run sent now would go to a new worker and use the GPU beside it. */
  private runTurn<T>(work: () => Promise<T>): Promise<T> {
    if (this.options.provider !== 'webgpu') return work();
    return gpuTurn(work, { owner: this, upTo: this.setAsideWorkers.size > 0 ? 1 : GPU_RUNS_IN_WORKER });
  }

  /** Sends one run to the worker (started first when there is none): the worker and its answer. Not sent, but
   * failed, when `givenUp()` once the worker is ready. */
  private async send(
    input: Float32Array,
    givenUp: () => boolean = () => false,
  ): Promise<{ worker: Worker; result: Promise<MaskPlane> }> {
    if (this.setAsideWorkers.size >= MAX_SET_ASIDE && !this.loadedWorker)
      throw new RmbgError(
        'processing_failed',
        `model ${this.model.name} cannot run: ${this.setAsideWorkers.size} workers set aside after runs past their limit are still running (${this.brokenBy})`,
      );
    // The weights were verified when the engine was created; a worker that died or was set aside is replaced here.
    const worker = await this.ensureWorker(Promise.resolve());
    if (givenUp()) throw new RmbgError('processing_failed', `model ${this.model.name}: the run was given up unsent`);
    const id = this.nextId++;
    const result = new Promise<MaskPlane>((resolve, reject) => this.pending.set(id, { resolve, reject, worker }));
    const whole =
      input.byteOffset === 0 && input.byteLength === input.buffer.byteLength && input.buffer instanceof ArrayBuffer;
    const sent = whole ? input : input.slice();
    worker.ref(); // a run in flight keeps the process alive, as it did on the main thread
    worker.postMessage({ type: 'run', id, input: sent } satisfies ToWorker, [sent.buffer as ArrayBuffer]);
    return { worker, result };
  }

  /** Fails `worker`'s runs and lets the next run start another; asked to release, it exits by itself when done.
   * Not terminate(): ending a worker inside an onnxruntime run ends the whole process (a fatal N-API error). */
  private setAside(worker: Worker, why: string): void {
    if (this.loadedWorker === worker) {
      this.workerReady = undefined;
      this.loadedWorker = undefined;
    }
    this.brokenBy = `${why} on the ${this.options.provider === 'webgpu' ? 'GPU' : 'CPU'}`;
    runningSetAside++;
    this.setAsideWorkers.set(
      worker,
      new Promise((resolve) => worker.once('exit', resolve)).finally(() => {
        runningSetAside--;
        this.setAsideWorkers.delete(worker);
      }),
    );
    this.failRuns(
      worker,
      new RmbgError(
        'processing_failed',
        `the inference worker was set aside: ${why} while running model ${this.model.name}`,
      ),
    );
    worker.postMessage({ type: 'release', dropQueued: true } satisfies ToWorker);
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
      // Behind a run set aside the turn may never come (a hung GPU): release the current worker without it.
      await (this.setAsideWorkers.size > 0 ? this.releaseNow() : this.turn(() => this.releaseNow()));
    } finally {
      // A worker set aside may still be in a GPU call: the GPU is given back once it has returned.
      void Promise.all(this.setAsideWorkers.values()).then(() => this.giveBackGpu());
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
          if (message.type === 'result') {
            LENT.give(message.spent);
            if (worker === this.loadedWorker) this.brokenBy = undefined; // a fresh worker answered
            run?.resolve(message.plane);
          } else run?.reject(new RmbgError(message.error.code, message.error.message));
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
