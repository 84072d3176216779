// The hashes of the store's unrevoked keys, held in memory, so the auth throttle can tell a valid key from an
// unknown one without a key lookup: loaded at start, then brought up to date from the store's count of key changes
// (one row, bumped by every key created or revoked, by any process or any server on the same database): every
// 2 s, and at once when a throttled address sends a key the set does not hold, so a key created a moment ago is
// served on its first request. Only the keys changed since the set's count are read.

import type { Store } from '../store/index.js';
import { messageOf } from '../api/errors.js';

/**
 * How often the count of key changes is read in the background (one row; the changed keys only when it moved),
 * so that revoked keys leave the set and new ones come in before anyone asks.
 */
export const KEY_SET_REFRESH_MS = 2_000;

/**
 * A Set of 64-character hex strings: about 100 bytes a key in V8 (measured: 1e6 keys take ~100 MB of heap, twice
 * that during a full load, which happens only at start or if the store's count went back), fine up to about a
 * million keys.
 */
export class ValidKeys {
  #hashes = new Set<string>();
  /** The store's count of key changes the set holds (undefined: not loaded yet). */
  #changes: number | undefined;
  #reading: Promise<void> | undefined;
  /** The read after the one under way, shared by every caller that came during it. */
  #next: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Pick<Store, 'keyChangeCount' | 'keysChangedSince' | 'activeKeyHashes'>,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
    readonly refreshMs: number = KEY_SET_REFRESH_MS,
  ) {}

  /** Keys known now. */
  get size(): number {
    return this.#hashes.size;
  }

  has(hash: string): boolean {
    return this.#hashes.has(hash);
  }

  /** A key a lookup just found valid: known at once, whatever the count says. */
  add(hash: string): void {
    this.#hashes.add(hash);
  }

  /** A key a lookup just found unknown or revoked. */
  delete(hash: string): void {
    this.#hashes.delete(hash);
  }

  /** Loads the set (a store that does not answer is warned about, and tried again at each interval), then polls. */
  async start(): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => void this.refresh(), this.refreshMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Brings the set up to date, in the background: a store that fails is warned about, the set kept. */
  refresh(): Promise<void> {
    return this.#read().catch((error: unknown) =>
      this.warn(`reading the changes of the valid API keys failed (kept the last ones): ${messageOf(error)}`),
    );
  }

  /**
   * Resolves once the set holds every key change committed before this call; rejects when the store fails. Callers
   * at the same moment share one read: at most one read of the count is under way, and one more waits behind it
   * (a read begun before the call may have missed a change the caller needs), so a flood of calls costs the store
   * one one-row read at a time.
   */
  current(): Promise<void> {
    if (this.#reading === undefined) return this.#read();
    this.#next ??= this.#reading
      .catch(() => undefined)
      .then(() => {
        this.#next = undefined;
        return this.#read();
      });
    return this.#next;
  }

  #read(): Promise<void> {
    this.#reading ??= this.#catchUp().finally(() => (this.#reading = undefined));
    return this.#reading;
  }

  async #catchUp(): Promise<void> {
    // The count is read before the keys: a key written between the two reads moves the count past the one kept,
    // so the next read takes it again (applying a change twice is harmless); the other order could miss it.
    const changes = await this.store.keyChangeCount();
    if (changes === this.#changes) return;
    if (this.#changes === undefined || changes < this.#changes) {
      // Not loaded yet, or a store whose count went back (restored from a backup): everything again.
      this.#hashes = new Set(await this.store.activeKeyHashes());
    } else {
      for (const { keyHash, revoked } of await this.store.keysChangedSince(this.#changes)) {
        if (revoked) this.#hashes.delete(keyHash);
        else this.#hashes.add(keyHash);
      }
    }
    this.#changes = changes;
  }
}
