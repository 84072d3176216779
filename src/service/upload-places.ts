// The upload places (request bodies being read at once) shared fairly: one API key holds at most a quarter of
// them, so a few keys sending slowly cannot make every other key's upload wait (503).

import { RmbgError } from '../api/errors.js';
import { Slots } from './slots.js';

/** Retry-After when the places are taken: an upload takes a second or two on a fast link. */
const RETRY_SECONDS = 2;

/** The places one key may hold: a quarter (4 of the default 16, the client's default concurrency), at least 1. */
export function perKeyShare(places: number): number {
  return Math.max(1, Math.floor(places / 4));
}

export class UploadPlaces {
  readonly #all: Slots;
  readonly #perKey = new Map<string, number>();
  readonly perKey: number;

  /** `size`: the row maxUploads of src/settings, checked against its bounds there. */
  constructor(readonly size: number) {
    this.#all = new Slots(size);
    this.perKey = perKeyShare(size);
  }

  /**
   * A release function (idempotent) for one place of `keyId`; 429 rate_limited when the key holds its share,
   * 503 service_busy when every place is taken.
   */
  take(keyId: string): () => void {
    const held = this.#perKey.get(keyId) ?? 0;
    if (held >= this.perKey) {
      throw new RmbgError(
        'rate_limited',
        `at most ${this.perKey} request bodies of one API key are received at once (of ${this.size}); retry when one has arrived`,
        { retryAfterSeconds: RETRY_SECONDS },
      );
    }
    const release = this.#all.tryTake();
    if (!release) {
      throw new RmbgError(
        'service_busy',
        `${this.size} request bodies are being received (the most at once); retry shortly`,
        { retryAfterSeconds: RETRY_SECONDS },
      );
    }
    this.#perKey.set(keyId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
      const left = (this.#perKey.get(keyId) ?? 1) - 1;
      if (left === 0) this.#perKey.delete(keyId);
      else this.#perKey.set(keyId, left);
    };
  }
}
