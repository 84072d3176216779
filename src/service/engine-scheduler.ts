// Runs engine jobs `slots` at a time (one on the CPU, several on a GPU: engine/runtime/device-report.ts), in arrival
// order, behind a bounded waiting line (full: 503 service_busy), each under a time limit that counts its wait in line
// too (over: 504 processing_timeout).

import { RmbgError } from '../api/errors.js';

/** Weight of the latest job in the running average that Retry-After is estimated from. */
const AVERAGE_WEIGHT = 0.3;

export interface SchedulerTicket {
  /**
   * Waits for the engine, then runs `work` with a signal that aborts on timeout (counted from the wait) or with
   * `signal`. A job past its time keeps its slot until it stops, so never more than `slots` run.
   */
  run<T>(work: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Gives the place back when the request ends without running (idempotent; a no-op after run). */
  release(): void;
}

export class EngineScheduler {
  /** Admitted tickets not finished yet: the running jobs plus those waiting. */
  #admitted = 0;
  #running = 0;
  readonly #waiting: Array<() => void> = [];
  #averageMs = 1000;

  constructor(
    readonly maxQueue: number,
    readonly timeoutMs: number,
    /** Jobs that run at once. */
    readonly slots = 1,
  ) {}

  get admitted(): number {
    return this.#admitted;
  }

  /** Takes a place in line; throws 503 service_busy when maxQueue requests already wait. */
  admit(): SchedulerTicket {
    if (this.#admitted >= this.maxQueue + this.slots) {
      const retryAfterSeconds = Math.max(1, Math.ceil((this.#averageMs * this.#admitted) / this.slots / 1000));
      throw new RmbgError(
        'service_busy',
        `${this.#admitted - this.slots} images are waiting for processing (at most ${this.maxQueue}); retry in ${retryAfterSeconds} s`,
        {
          retryAfterSeconds,
        },
      );
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
        // The time limit counts from here, waiting included: behind a stuck image a request would otherwise
        // wait without bound, holding its charge and its lease.
        const deadline = this.#deadline();
        try {
          await this.#acquire(signal, deadline);
        } catch (error) {
          deadline.clear();
          finish();
          throw error;
        }
        return this.#runAcquired(work, signal, finish, deadline);
      },
      release: () => {
        if (!started) finish();
      },
    };
  }

  /** Aborts with 504 processing_timeout once timeoutMs have passed, saying whether the job had started. */
  #deadline(): Deadline {
    const controller = new AbortController();
    const deadline: Deadline = {
      signal: controller.signal,
      running: false,
      clear: () => clearTimeout(timer),
    };
    const limit = `${this.timeoutMs / 1000} s`;
    const timer = setTimeout(() => {
      controller.abort(
        deadline.running
          ? new RmbgError(
              'processing_timeout',
              `processing took longer than the limit of ${limit} (waiting for the model included)`,
            )
          : new RmbgError(
              'processing_timeout',
              `the image waited ${limit} for the model, busy with earlier images, without starting; the limit of ${limit} counts the wait`,
            ),
      );
    }, this.timeoutMs);
    return deadline;
  }

  #acquire(signal: AbortSignal | undefined, deadline: Deadline): Promise<void> {
    if (signal?.aborted) return Promise.reject(interrupted());
    if (this.#running < this.slots) {
      this.#running += 1;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const leave = (reason: unknown) => {
        const index = this.#waiting.indexOf(grant);
        if (index >= 0) this.#waiting.splice(index, 1);
        stopListening();
        reject(reason);
      };
      const onAbort = () => leave(interrupted());
      const onDeadline = () => leave(deadline.signal.reason);
      const stopListening = () => {
        signal?.removeEventListener('abort', onAbort);
        deadline.signal.removeEventListener('abort', onDeadline);
      };
      const grant = () => {
        stopListening();
        resolve();
      };
      this.#waiting.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
      deadline.signal.addEventListener('abort', onDeadline, { once: true });
    });
  }

  #handOver(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#running -= 1;
  }

  #runAcquired<T>(
    work: (signal: AbortSignal) => Promise<T>,
    signal: AbortSignal | undefined,
    finish: () => void,
    deadline: Deadline,
  ): Promise<T> {
    deadline.running = true;
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

    let onDeadline: () => void = () => undefined;
    const timedOut = new Promise<never>((_, reject) => {
      onDeadline = () => {
        controller.abort(deadline.signal.reason);
        reject(deadline.signal.reason);
      };
      if (deadline.signal.aborted) onDeadline();
      else deadline.signal.addEventListener('abort', onDeadline, { once: true });
    });
    return Promise.race([job, timedOut]).finally(() => {
      deadline.clear();
      deadline.signal.removeEventListener('abort', onDeadline);
    });
  }
}

interface Deadline {
  readonly signal: AbortSignal;
  /** Set when the job starts: the timeout's message says whether it ran or only waited. */
  running: boolean;
  clear(): void;
}

function interrupted(): RmbgError {
  return new RmbgError('interrupted', 'the request was cancelled while waiting for processing');
}
