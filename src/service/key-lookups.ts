// The store's key lookups, guarded: at most a few at once (a flood of keys must not take the connection pool
// from the requests already running), and a memory of the keys that were valid lately, so an address the
// throttle refuses has only those looked up: its unknown keys get 429 without costing the store anything.

import { createHash } from 'node:crypto';
import type { KeyOwner, Store } from '../store/index.js';
import { authenticate } from './authenticate.js';

/**
 * Key lookups in progress at once, all addresses together; more wait their turn. Most of the default pool of 10,
 * not all of it: lookups stuck on connections that stopped answering (each until the query bound) leave room.
 */
export const MAX_CONCURRENT_KEY_LOOKUPS = 6;
/** How long a key that authenticated stays known without being used again. */
const REMEMBERED_MS = 10 * 60_000;
/** Keys remembered at once (about 150 bytes each); past it the least recently used is forgotten. */
const MAX_REMEMBERED_KEYS = 10_000;

export class KeyLookups {
  /** sha256 of a key (never the key itself) → when it is forgotten; in order of last use, the oldest first. */
  readonly #valid = new Map<string, number>();
  readonly #waiting: Array<() => void> = [];
  #running = 0;

  constructor(
    private readonly store: Pick<Store, 'accountForKey'>,
    readonly maxConcurrent: number = MAX_CONCURRENT_KEY_LOOKUPS,
  ) {}

  /** Whether `apiKey` authenticated within the last minutes (it is then looked up even for a refused address). */
  recentlyValid(apiKey: string | undefined, now: number): boolean {
    if (apiKey === undefined) return false;
    const until = this.#valid.get(digest(apiKey));
    return until !== undefined && until > now;
  }

  /** authenticate() in turn with the other lookups; a key that passes is remembered. */
  async authenticate(apiKey: string | undefined, now: number): Promise<KeyOwner> {
    await this.#take();
    try {
      const owner = await authenticate(this.store, apiKey);
      this.#remember(digest(apiKey as string), now);
      return owner;
    } finally {
      this.#release();
    }
  }

  #remember(hash: string, now: number): void {
    this.#valid.delete(hash); // re-inserted last: the Map's order is the order of last use
    this.#valid.set(hash, now + REMEMBERED_MS);
    if (this.#valid.size > MAX_REMEMBERED_KEYS) this.#valid.delete(this.#valid.keys().next().value as string);
  }

  async #take(): Promise<void> {
    if (this.#running < this.maxConcurrent) {
      this.#running += 1;
      return;
    }
    // The place is handed over by #release, so #running stays counted.
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#running -= 1;
  }
}

function digest(apiKey: string): string {
  return createHash('sha256').update(apiKey.trim(), 'utf8').digest('hex');
}
