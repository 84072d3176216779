// The service's time: this server's clock (injectable) corrected by its measured offset from the database's,
// so leases, rate windows and every row's date are read on the one clock all servers on a shared store agree
// on. A server whose clock runs ahead or behind then neither refunds live work early nor keeps dead work late.

import type { Store } from '../store/index.js';

/** A reading whose round trip took longer than this is discarded (it waited for a pool connection, or a slow network). */
export const MAX_ROUND_TRIP_MS = 250;
/** Nor one slower than this many times the best round trip seen lately (with a floor for timer jitter). */
const ROUND_TRIP_FACTOR = 4;
const ROUND_TRIP_FLOOR_MS = 50;
/**
 * "Lately": the best of the last this many readings, not of all time, so after a move to a farther database the
 * new round trips become the measure within as many syncs, and a later step of this server's clock is corrected.
 */
const ROUND_TRIP_WINDOW = 8;

export class StoreClock {
  #offsetMs = 0;
  #measured = false;
  /** The round trips of the last readings, the newest last. */
  readonly #roundTrips: number[] = [];

  constructor(
    private readonly store: Pick<Store, 'engine' | 'clock'>,
    /** This server's own clock (Date.now unless a test injects one). */
    private readonly serverNow: () => number,
  ) {}

  /** The database's time as this server estimates it. */
  now(): number {
    return this.serverNow() + this.#offsetMs;
  }

  /**
   * Measures the offset again (at start, before each sweep; not on SQLite, which has one server). A reading is off
   * by up to half its round trip, so a slow one keeps the last offset, unless there is none yet.
   */
  async sync(): Promise<void> {
    if (this.store.engine !== 'postgres') return;
    const before = this.serverNow();
    const database = await this.store.clock();
    const after = this.serverNow();
    const roundTrip = after - before;
    this.#roundTrips.push(roundTrip);
    if (this.#roundTrips.length > ROUND_TRIP_WINDOW) this.#roundTrips.shift();
    const slow =
      roundTrip > MAX_ROUND_TRIP_MS ||
      roundTrip > Math.max(ROUND_TRIP_FACTOR * Math.min(...this.#roundTrips), ROUND_TRIP_FLOOR_MS);
    if (slow && this.#measured) return;
    // About halfway through the round trip; whole milliseconds, as the columns are.
    this.#offsetMs = Math.round(database - (before + after) / 2);
    this.#measured = true;
  }
}
