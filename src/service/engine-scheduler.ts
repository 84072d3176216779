// Runs engine jobs one at a time, in arrival order, behind a bounded waiting line (full: 503
// service_busy), each under a time limit (over: 504 processing_timeout).

import { RmbgError } from '../api/errors.js';

/** Weight of the latest job in the running average that Retry-After is estimated from. */
const AVERAGE_WEIGHT = 0.3;

export interface SchedulerTicket {
  /**
   * Waits for the engine, then runs `work` with a signal that aborts on timeout or when `signal` aborts.
   * A job that outlives its time limit keeps the engine until it really stops, so jobs never overlap.
   */
  run<T>(work: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Gives the place back when the request ends without running (idempotent; a no-op after run). */
  release(): void;
}

export class EngineScheduler {
  /** Admitted tickets not finished yet: the running job plus those waiting. */
  #admitted = 0;
  #busy = false;
  readonly #waiting: Array<() => void> = [];
  #averageMs = 1000;

  constructor(
    readonly maxQueue: number,
    readonly timeoutMs: number,
  ) {}

  get admitted(): number {
    return this.#admitted;
  }

  /** Takes a place in line; throws 503 service_busy when maxQueue requests already wait. */
  admit(): SchedulerTicket {
    if (this.#admitted >= this.maxQueue + 1) {
      const retryAfterSeconds = Math.max(1, Math.ceil((this.#averageMs * this.#admitted) / 1000));
      throw new RmbgError('service_busy', `${this.#admitted - 1} images are waiting for processing (at most ${this.maxQueue}); retry in ${retryAfterSeconds} s`, {
        retryAfterSeconds,
      });
    }
    this.#admitted += 1;
    let finished = false;
    let started = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      this.#admitted -= 1;
    };
    return {
      run: async (work, signal) => {
        if (started || finished) throw new Error('a scheduler ticket runs once');
        started = true;
        try {
          await this.#acquire(signal);
        } catch (error) {
          finish();
          throw error;
        }
        return this.#runAcquired(work, signal, finish);
      },
      release: () => {
        if (!started) finish();
      },
    };
  }

  #acquire(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(interrupted());
    if (!this.#busy) {
      this.#busy = true;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const index = this.#waiting.indexOf(grant);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(interrupted());
      };
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.#waiting.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #handOver(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#busy = false;
  }

  #runAcquired<T>(work: (signal: AbortSignal) => Promise<T>, signal: AbortSignal | undefined, finish: () => void): Promise<T> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const started = Date.now();
    const job = Promise.resolve().then(() => work(controller.signal));
    void job
      .then(() => {
        this.#averageMs = AVERAGE_WEIGHT * (Date.now() - started) + (1 - AVERAGE_WEIGHT) * this.#averageMs;
      })
      .catch(() => undefined)
      .finally(() => {
        signal?.removeEventListener('abort', onAbort);
        finish();
        this.#handOver();
      });

    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new RmbgError('processing_timeout', `processing took longer than the limit of ${this.timeoutMs / 1000} s`);
        controller.abort(error);
        reject(error);
      }, this.timeoutMs);
    });
    return Promise.race([job, deadline]).finally(() => clearTimeout(timer));
  }
}

function interrupted(): RmbgError {
  return new RmbgError('interrupted', 'the request was cancelled while waiting for processing');
}
