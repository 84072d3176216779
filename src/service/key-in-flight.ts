// Per-key cap on requests in flight: one key cannot hold every engine place, URL download or body
// slot at once (a slow image_url, a burst of uploads), so other keys keep being served.

import { RmbgError } from '../api/errors.js';
import type { RateLimitInfo } from '../api/wire-types.js';

/** Retry-After of a refused request: about one image's processing time. */
const RETRY_SECONDS = 2;

export class KeyInFlight {
  readonly #counts = new Map<string, number>();

  /** `maxPerKey`: the row maxInFlightPerKey of src/settings, checked against its bounds there. */
  constructor(readonly maxPerKey: number) {}

  /** Counts one request of `keyId` until the returned release is called; over the cap: 429 rate_limited. */
  enter(keyId: string, rateLimit: RateLimitInfo): () => void {
    const count = this.#counts.get(keyId) ?? 0;
    if (count >= this.maxPerKey) {
      throw new RmbgError(
        'rate_limited',
        `at most ${this.maxPerKey} requests per API key may be in progress at once; wait for one to finish`,
        {
          retryAfterSeconds: RETRY_SECONDS,
          rateLimit,
        },
      );
    }
    this.#counts.set(keyId, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#counts.get(keyId) ?? 1) - 1;
      if (left === 0) this.#counts.delete(keyId);
      else this.#counts.set(keyId, left);
    };
  }
}
