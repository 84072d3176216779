// Failed authentications per client address, in memory (a loop of bad keys must not write a row each): over the
// limit, a missing or unknown key gets 429 until the window ends, while a valid key from the address is still served.

import { isIPv6 } from 'node:net';
import { RmbgError } from '../api/errors.js';

const WINDOW_MS = 60_000;
/**
 * Addresses remembered at once (about 100 bytes each). Past it the oldest window is forgotten, so any number
 * of addresses within a minute costs a bounded map; that address then starts counting again.
 */
export const MAX_THROTTLED_ADDRESSES = 10_000;

/**
 * What one client is, for the throttle: an IPv4 address (also when written IPv4-mapped), or an IPv6 address's
 * /64, since one IPv6 client is usually given a whole /64 and could rotate through it.
 */
export function throttledUnit(address: string): string {
  if (!isIPv6(address)) return address;
  const plain = (address.split('%')[0] as string).toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(plain);
  if (mapped) return mapped[1] as string;
  const [head = '', tail] = plain.split('::');
  const split = (part: string) => (part === '' ? [] : part.split(':'));
  const groups = split(head);
  if (tail !== undefined) {
    // '::' stands for the zero groups that make eight (a dotted IPv4 tail counts as two).
    const after = split(tail).flatMap((group) => (group.includes('.') ? ['0', '0'] : [group]));
    groups.push(...Array<string>(8 - groups.length - after.length).fill('0'), ...after);
  }
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

interface FailureWindow {
  start: number;
  failures: number;
  reported: boolean;
}

export class AuthThrottle {
  // A window is inserted when it starts and deleted when it ends (a new one is inserted afresh), so the Map's
  // insertion order is the order of the windows' starts: the oldest is always first, and evicting it is O(1).
  readonly #windows = new Map<string, FailureWindow>();

  /** `maxFailuresPerMinute`: the row maxAuthFailures of src/settings, checked against its bounds there. */
  constructor(
    readonly maxFailuresPerMinute: number,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
    readonly maxAddresses: number = MAX_THROTTLED_ADDRESSES,
  ) {}

  /** Addresses remembered now. */
  get size(): number {
    return this.#windows.size;
  }

  /**
   * The 429 rate_limited for `address` while it is over its failures of the current minute, else undefined.
   * The caller decides whom it refuses: a request with a valid key is never refused by it.
   */
  refusal(address: string | undefined, now: number): RmbgError | undefined {
    const window = this.#current(address === undefined ? undefined : throttledUnit(address), now);
    if (!window || window.failures < this.maxFailuresPerMinute) return undefined;
    const retryAfterSeconds = Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000));
    return new RmbgError(
      'rate_limited',
      `too many requests with a missing or invalid API key from this address (at most ${this.maxFailuresPerMinute} a minute); retry in ${retryAfterSeconds} s with a valid key`,
      { retryAfterSeconds },
    );
  }

  /** Counts one failed authentication of `address`; the first time it reaches the limit, one warning. */
  fail(clientAddress: string | undefined, now: number): void {
    if (clientAddress === undefined) return;
    const address = throttledUnit(clientAddress);
    let window = this.#current(address, now);
    if (!window) {
      this.#evict(now);
      window = { start: now, failures: 0, reported: false };
      this.#windows.set(address, window);
    }
    window.failures += 1;
    if (window.failures >= this.maxFailuresPerMinute && !window.reported) {
      window.reported = true;
      this.warn(
        `${window.failures} failed authentications from ${address} within a minute; its requests without a valid key are refused (429) until the minute ends`,
      );
    }
  }

  #current(address: string | undefined, now: number): FailureWindow | undefined {
    if (address === undefined) return undefined;
    const window = this.#windows.get(address);
    if (window && now - window.start < WINDOW_MS) return window;
    if (window) this.#windows.delete(address);
    return undefined;
  }

  /** Before a new window: drops the oldest if it has ended, and the oldest anyway when the map is full. */
  #evict(now: number): void {
    // Two looks at the oldest per new window: ended windows drain as fast as new ones come, and none is a scan.
    for (let look = 0; look < 2; look += 1) {
      const oldest = this.#windows.entries().next();
      if (oldest.done === true) return;
      const [address, window] = oldest.value;
      if (now - window.start < WINDOW_MS && this.#windows.size < this.maxAddresses) return;
      this.#windows.delete(address);
    }
  }
}
