// Failed authentications are counted per client address in memory, not stored one row each: a loop of
// bad keys would otherwise write (and fsync) a usage record per request. An address over the limit is
// answered 429 before its key is even looked at, until its window ends.

import { RmbgError } from '../api/errors.js';
import { assertWhole } from './assert-whole.js';

const WINDOW_MS = 60_000;
/** Addresses kept before expired windows are swept, so spoofed-looking churn cannot grow the map for ever. */
const SWEEP_THRESHOLD = 4096;

export class AuthThrottle {
  readonly #windows = new Map<string, { start: number; failures: number; reported: boolean }>();

  constructor(
    readonly maxFailuresPerMinute: number,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
  ) {
    assertWhole('maxAuthFailures', maxFailuresPerMinute, 1);
  }

  /** Throws 429 rate_limited while `address` is over its failures of the current minute. */
  check(address: string | undefined, now: number): void {
    const window = this.#current(address, now);
    if (!window || window.failures < this.maxFailuresPerMinute) return;
    const retryAfterSeconds = Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000));
    throw new RmbgError(
      'rate_limited',
      `too many requests with a missing or invalid API key from this address (at most ${this.maxFailuresPerMinute} a minute); retry in ${retryAfterSeconds} s with a valid key`,
      { retryAfterSeconds },
    );
  }

  /** Counts one failed authentication of `address`; the first time it reaches the limit, one warning. */
  fail(address: string | undefined, now: number): void {
    if (address === undefined) return;
    let window = this.#current(address, now);
    if (!window) {
      if (this.#windows.size >= SWEEP_THRESHOLD) this.#sweep(now);
      window = { start: now, failures: 0, reported: false };
      this.#windows.set(address, window);
    }
    window.failures += 1;
    if (window.failures >= this.maxFailuresPerMinute && !window.reported) {
      window.reported = true;
      this.warn(`${window.failures} failed authentications from ${address} within a minute; its requests are refused (429) until the minute ends`);
    }
  }

  #current(address: string | undefined, now: number) {
    if (address === undefined) return undefined;
    const window = this.#windows.get(address);
    if (window && now - window.start < WINDOW_MS) return window;
    if (window) this.#windows.delete(address);
    return undefined;
  }

  #sweep(now: number): void {
    for (const [address, window] of this.#windows) if (now - window.start >= WINDOW_MS) this.#windows.delete(address);
  }
}
