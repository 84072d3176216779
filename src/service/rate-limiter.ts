// Per-key request limit: a fixed one-minute window in memory (the service is one process). The window's
// state goes back as data on every answer to an authenticated caller; src/server renders it as headers.

import { RmbgError } from '../api/errors.js';
import type { RateLimitInfo } from '../api/wire-types.js';

const WINDOW_MS = 60_000;
/** Windows kept before expired ones are swept, so a stream of one-off keys cannot grow the map for ever. */
const SWEEP_THRESHOLD = 1024;

export class RateLimiter {
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(readonly limitPerMinute: number) {
    if (!Number.isInteger(limitPerMinute) || limitPerMinute < 1) {
      throw new RangeError(`rateLimitPerMinute must be a whole number of at least 1; got ${limitPerMinute}`);
    }
  }

  /** Counts one request of `id`; throws 429 rate_limited (with Retry-After and the window) when over the limit. */
  take(id: string, now: number): RateLimitInfo {
    let window = this.#windows.get(id);
    if (!window || now - window.start >= WINDOW_MS) {
      if (!window && this.#windows.size >= SWEEP_THRESHOLD) this.#sweep(now);
      window = { start: now, count: 0 };
      this.#windows.set(id, window);
    }
    const resetSeconds = Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000));
    if (window.count >= this.limitPerMinute) {
      throw new RmbgError('rate_limited', `at most ${this.limitPerMinute} requests per minute per API key; retry in ${resetSeconds} s`, {
        retryAfterSeconds: resetSeconds,
        rateLimit: { limit: this.limitPerMinute, remaining: 0, resetSeconds },
      });
    }
    window.count += 1;
    return { limit: this.limitPerMinute, remaining: this.limitPerMinute - window.count, resetSeconds };
  }

  #sweep(now: number): void {
    for (const [id, window] of this.#windows) {
      if (now - window.start >= WINDOW_MS) this.#windows.delete(id);
    }
  }
}
