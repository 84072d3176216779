// The bound on how long a request's answer waits on the database, whatever the database does (connections that
// freeze, new ones that hang, a pool that never frees): each of its waits on the store is raced against what is
// left of the request's budget, and past it the request is answered 503 service_unavailable with Retry-After
// while the store call goes on unwatched (leases, the refunder and the sweep settle whatever it leaves).

import { RmbgError } from '../api/errors.js';

/**
 * The most a request's answer waits on the database, all its store calls together (docs/deploy.md, "What is found
 * how fast"). Time spent on the client's upload, an image_url download or the engine does not count.
 */
export const ANSWER_BOUND_MS = 20_000;
/** Of the bound, what is kept for sending the answer once the budget is spent. */
const SEND_MARGIN_MS = 1_000;
/** Retry-After of an answer cut at the bound: the same as a database found unreachable. */
const RETRY_AFTER_SECONDS = 2;

/** One request's time left to wait on the database. Its calls run one after another, never together. */
export class DatabaseBudget {
  #leftMs: number;

  constructor(ms: number = ANSWER_BOUND_MS - SEND_MARGIN_MS) {
    this.#leftMs = ms;
  }

  remainingMs(): number {
    return this.#leftMs;
  }

  /** `work`'s outcome, or 503 once the budget is spent; the time waited is taken off the budget either way. */
  async bound<T>(work: Promise<T>): Promise<T> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(outOfTime()), this.#leftMs);
    });
    try {
      return await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
      this.#leftMs = Math.max(0, this.#leftMs - (performance.now() - started));
    }
  }

  /** Waits `ms` (a pause between two tries), counted against the budget; 503 if that would spend it. */
  pause(ms: number): Promise<void> {
    return this.bound(new Promise<void>((resolve) => setTimeout(resolve, ms).unref()));
  }
}

function outOfTime(): RmbgError {
  return new RmbgError(
    'service_unavailable',
    `the database did not answer within ${ANSWER_BOUND_MS / 1000} s; retry shortly`,
    { retryAfterSeconds: RETRY_AFTER_SECONDS },
  );
}
