// The hashes of the store's unrevoked keys, held in memory, so the auth throttle can tell a valid key from an
// unknown one without a store lookup: loaded at start, then reloaded when the store's key change marker moves
// (a key created or revoked by any process or any server on the same database).

import type { Store } from '../store/index.js';
import { messageOf } from '../api/errors.js';

/**
 * How often the change marker is read (one count of the key table; a full reload only when it moved). A key
 * created or revoked elsewhere is in, or out of, this set within this time plus one reload.
 */
export const KEY_SET_REFRESH_MS = 2_000;
/** Seconds within which this server knows a key created elsewhere: the interval, and a second for the reload. */
export const KEY_SET_KNOWN_WITHIN_S = Math.ceil(KEY_SET_REFRESH_MS / 1000) + 1;

/**
 * A Set of 64-character hex strings: about 100 bytes a key in V8 (measured: 1e6 keys take ~100 MB of heap, twice that during a reload),
 * fine up to about a million keys.
 */
export class ValidKeys {
  #hashes = new Set<string>();
  #marker: string | undefined;
  #refreshing: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Pick<Store, 'keyChangeMarker' | 'activeKeyHashes'>,
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

  /** A key a lookup just found valid (created since the last reload): known at once, not only after the next. */
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

  /** Reads the marker and reloads the set if it moved; one at a time (a caller during one shares it). */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#reload()
      .catch((error: unknown) =>
        this.warn(`reloading the valid API keys failed (kept the last ones): ${messageOf(error)}`),
      )
      .finally(() => (this.#refreshing = undefined));
    return this.#refreshing;
  }

  async #reload(): Promise<void> {
    // The marker is read before the hashes: a key written between the two reads moves the marker again, so the
    // next refresh reloads; the other order could keep a stale set under a fresh marker.
    const marker = await this.store.keyChangeMarker();
    if (marker === this.#marker) return;
    this.#hashes = new Set(await this.store.activeKeyHashes());
    this.#marker = marker;
  }
}
