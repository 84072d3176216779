// Per-key request limit: a fixed one-minute window counted in the store, so every instance on one store
// counts into the same window and N instances enforce the limit one does. The window's state goes back as
// data on every answer to an authenticated caller; src/server renders it as headers.

import { RmbgError } from '../api/errors.js';
import type { RateLimitInfo } from '../api/wire-types.js';
import type { Store } from '../store/index.js';

const WINDOW_MS = 60_000;

export class RateLimiter {
  /** `limitPerMinute`: the row rateLimit of src/settings, checked against its bounds there. */
  constructor(
    readonly limitPerMinute: number,
    private readonly store: Pick<Store, 'countRequest'>,
  ) {}

  /** Counts one request of `id`; throws 429 rate_limited (with Retry-After and the window) when over the limit. */
  async take(id: string, now: number): Promise<RateLimitInfo> {
    const window = await this.store.countRequest(id, now, WINDOW_MS);
    const resetSeconds = Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000));
    if (window.count > this.limitPerMinute) {
      throw new RmbgError(
        'rate_limited',
        `at most ${this.limitPerMinute} requests per minute per API key; retry in ${resetSeconds} s`,
        {
          retryAfterSeconds: resetSeconds,
          rateLimit: { limit: this.limitPerMinute, remaining: 0, resetSeconds },
        },
      );
    }
    return { limit: this.limitPerMinute, remaining: this.limitPerMinute - window.count, resetSeconds };
  }
}
