// The store's key lookups, guarded: at most a few lookups of keys this server does not know at once (a flood of
// keys must not take the connection pool from the requests already running), while the keys it knows valid
// (ValidKeys) skip that queue. An address the throttle refuses has only valid keys looked up: its unknown keys get
// 429 after one read of the store's count of key changes (shared by the callers of the moment), never a lookup.
// A lookup waits for its place and its answer within the request's database budget (answer-bound.ts): past it,
// 503 service_unavailable, while a lookup already sent keeps its place until the store answers or gives it up.

import { hashApiKey, type KeyOwner, type Store } from '../store/index.js';
import { RmbgError } from '../api/errors.js';
import { DatabaseBudget } from './answer-bound.js';
import { authenticate } from './authenticate.js';
import type { ValidKeys } from './valid-keys.js';

/**
 * Key lookups in progress at once, all addresses together; more wait their turn. Most of the default pool of 10,
 * not all of it: lookups stuck on connections that stopped answering (each until the query bound) leave room.
 */
export const MAX_CONCURRENT_KEY_LOOKUPS = 6;

export class KeyLookups {
  readonly #waiting: Array<() => void> = [];
  #running = 0;

  constructor(
    private readonly store: Pick<Store, 'accountForKey'>,
    private readonly validKeys: ValidKeys,
    readonly maxConcurrent: number = MAX_CONCURRENT_KEY_LOOKUPS,
  ) {}

  /**
   * Whether `apiKey` is one of the store's unrevoked keys, a key created a moment ago included: the set of valid
   * keys, brought up to date first when it does not hold the key (no lookup). False for a missing key, and when the
   * store cannot say within the budget.
   */
  async known(apiKey: string | undefined, budget: DatabaseBudget = new DatabaseBudget()): Promise<boolean> {
    if (apiKey === undefined || apiKey.trim() === '') return false;
    if (this.#holds(apiKey)) return true;
    try {
      await budget.bound(this.validKeys.current());
    } catch {
      return false;
    }
    return this.#holds(apiKey);
  }

  /**
   * authenticate(); a key the set of valid keys does not hold waits its turn with the other such lookups. What the
   * lookup finds about the key corrects the set.
   */
  async authenticate(apiKey: string | undefined, budget: DatabaseBudget = new DatabaseBudget()): Promise<KeyOwner> {
    // A known key is still looked up (it may have been revoked a moment ago), but never queued behind a flood.
    const queued = !this.#holds(apiKey);
    if (queued) await this.#take(budget);
    const lookup = authenticate(this.store, apiKey).then(
      (owner) => {
        this.validKeys.add(digest(apiKey as string));
        return owner;
      },
      (error: unknown) => {
        if (error instanceof RmbgError && error.code === 'invalid_api_key')
          this.validKeys.delete(digest(apiKey as string));
        throw error;
      },
    );
    // The place is held until the store answers (or the driver gives the query up), even past the budget: the
    // lookups stuck on a database that stopped answering must not let more of them take the pool.
    if (queued)
      void lookup.then(
        () => this.#release(),
        () => this.#release(),
      );
    return budget.bound(lookup);
  }

  #holds(apiKey: string | undefined): boolean {
    return apiKey !== undefined && apiKey.trim() !== '' && this.validKeys.has(digest(apiKey));
  }

  async #take(budget: DatabaseBudget): Promise<void> {
    if (this.#running < this.maxConcurrent) {
      this.#running += 1;
      return;
    }
    // The place is handed over by #release, so #running stays counted.
    let granted = false;
    let turn: (() => void) | undefined;
    const given = new Promise<void>((resolve) => {
      turn = () => {
        granted = true;
        resolve();
      };
      this.#waiting.push(turn);
    });
    try {
      await budget.bound(given);
    } catch (error) {
      // Out of time while waiting: the turn is given up, or handed on if it came meanwhile.
      if (granted) this.#release();
      else this.#waiting.splice(this.#waiting.indexOf(turn as () => void), 1);
      throw error;
    }
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#running -= 1;
  }
}

/** The key's hash as the store keeps it (authenticate() looks the key up trimmed). */
function digest(apiKey: string): string {
  return hashApiKey(apiKey.trim());
}
