// Failed authentications per client (an IPv4 address, an IPv6 /64), in memory (a loop of bad keys must not write a
// row each): over the limit, a missing or unknown key gets 429 until the window ends, while a valid key from the
// client is still served. The windows are bounded in number; which one is forgotten for a new one is chosen so
// that nobody can empty the throttle by rotating through more addresses than it holds (see #makeRoom).

import { isIPv6 } from 'node:net';
import { RmbgError } from '../api/errors.js';

const WINDOW_MS = 60_000;
/**
 * Clients remembered at once (about 150 bytes each). Past it a window is forgotten for each new one: one already
 * over, else the least recently used of those with the fewest failures (that client then starts counting again).
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
  unit: string;
  start: number;
  failures: number;
  reported: boolean;
}

export class AuthThrottle {
  readonly #windows = new Map<string, FailureWindow>();
  /**
   * The same windows by their failures: level n holds those with 2^n to 2^(n+1) - 1 failures, the last level those
   * at the limit. Each level is in order of last failure (a failure moves its window to the end), so its first
   * window is its least recently used, found in O(1).
   */
  readonly #levels: Array<Map<string, FailureWindow>>;

  /** `maxFailuresPerMinute`: the row maxAuthFailures of src/settings, checked against its bounds there. */
  constructor(
    readonly maxFailuresPerMinute: number,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
    readonly maxAddresses: number = MAX_THROTTLED_ADDRESSES,
  ) {
    this.#levels = Array.from({ length: this.#levelOf(maxFailuresPerMinute) + 1 }, () => new Map());
  }

  /** Clients remembered now. */
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
      `too many requests with a missing or invalid API key from this address (at most ${this.maxFailuresPerMinute} ` +
        `a minute); retry in ${retryAfterSeconds} s with a valid key`,
      { retryAfterSeconds },
    );
  }

  /**
   * Counts one failed authentication of `address` (also one refused: the window stays in use); the first time it
   * reaches the limit, one warning.
   */
  fail(clientAddress: string | undefined, now: number): void {
    if (clientAddress === undefined) return;
    const unit = throttledUnit(clientAddress);
    let window = this.#current(unit, now);
    if (window) this.#levels[this.#levelOf(window.failures)]?.delete(unit);
    else {
      this.#makeRoom(now);
      window = { unit, start: now, failures: 0, reported: false };
      this.#windows.set(unit, window);
    }
    window.failures += 1;
    this.#levels[this.#levelOf(window.failures)]?.set(unit, window);
    if (window.failures >= this.maxFailuresPerMinute && !window.reported) {
      window.reported = true;
      this.warn(
        `${window.failures} failed authentications from ${unit} within a minute; its requests without a valid key are refused (429) until the minute ends`,
      );
    }
  }

  /** 0 for 1 failure, 1 for 2-3, 2 for 4-7 …; at the limit, the last level. */
  #levelOf(failures: number): number {
    const atLimit = Math.floor(Math.log2(Math.max(1, this.maxFailuresPerMinute - 1))) + 1;
    return failures >= this.maxFailuresPerMinute ? atLimit : Math.floor(Math.log2(Math.max(1, failures)));
  }

  #current(unit: string | undefined, now: number): FailureWindow | undefined {
    if (unit === undefined) return undefined;
    const window = this.#windows.get(unit);
    if (window && now - window.start < WINDOW_MS) return window;
    if (window) this.#forget(window);
    return undefined;
  }

  #forget(window: FailureWindow): void {
    this.#windows.delete(window.unit);
    this.#levels[this.#levelOf(window.failures)]?.delete(window.unit);
  }

  /**
   * Before a new window: forgets the least recently used windows of each level whose minute is over (so the map
   * shrinks back without a sweep), then, if it is still full, the least recently used window of the lowest level.
   * Evicting by start instead (the oldest window first) let 10,001 addresses with one failure each empty it. Now a
   * client with F failures is forgotten only while every other window remembered has at least about F (within a
   * factor of two), and among equals only if it failed least recently: to push out one client that keeps failing,
   * an attacker must hold MAX_THROTTLED_ADDRESSES other clients (IPv6 /64s) as far along within one minute, about
   * F × 10,000 failed keys, each a key lookup (at most MAX_CONCURRENT_KEY_LOOKUPS at once): 300,000 a minute for a
   * client at the default limit. A client with a failure or two is cheap to push out, and is far from being refused.
   */
  #makeRoom(now: number): void {
    // Two looks a level: windows that are over drain faster than new ones come, and none is a scan.
    for (const level of this.#levels) {
      for (let look = 0; look < 2; look += 1) {
        const leastRecent = level.values().next().value;
        if (leastRecent === undefined || now - leastRecent.start < WINDOW_MS) break;
        this.#forget(leastRecent);
      }
    }
    if (this.#windows.size < this.maxAddresses) return;
    const lowest = this.#levels.find((level) => level.size > 0);
    const victim = lowest?.values().next().value;
    if (victim) this.#forget(victim);
  }
}
