// The service's time: this server's clock (injectable) corrected by its measured offset from the database's,
// so leases, rate windows and every row's date are read on the one clock all servers on a shared store agree
// on. A server whose clock runs ahead or behind then neither refunds live work early nor keeps dead work late.

import type { Store } from '../store/index.js';

/**
 * The readings kept: the best (quickest) of the last this many is the offset, so a reading that waited (for a
 * pool connection) does not replace a quick one, and after a move to a farther database its round trips become
 * the measure within as many syncs. No round trip is too slow to count: a database always far away still
 * measures the offset, within half its round trip.
 */
const READINGS_KEPT = 8;
/** The database's clock and ours are read in whole milliseconds. */
const RESOLUTION_MS = 1;

/** One reading: the offset lies between `low` and `high` (the database read its clock during the round trip). */
interface Reading {
  low: number;
  high: number;
}

export class StoreClock {
  #offsetMs = 0;
  /** The last readings, the newest last. */
  #readings: Reading[] = [];

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
   * Measures the offset again (at start, before each sweep; not on SQLite, which has one server) and takes the
   * middle of the quickest recent reading. A reading whose range of offsets does not overlap an older one's
   * proves a clock stepped between them: the older ones are dropped, so the step is corrected at once.
   */
  async sync(): Promise<void> {
    if (this.store.engine !== 'postgres') return;
    const before = this.serverNow();
    const database = await this.store.clock();
    const after = this.serverNow();
    const reading = { low: database - after - RESOLUTION_MS, high: database - before + RESOLUTION_MS };
    this.#readings = this.#readings.filter((older) => older.low <= reading.high && reading.low <= older.high);
    this.#readings.push(reading);
    if (this.#readings.length > READINGS_KEPT) this.#readings.shift();
    const best = this.#readings.reduce((quickest, each) =>
      each.high - each.low <= quickest.high - quickest.low ? each : quickest,
    );
    // Whole milliseconds, as the columns are.
    this.#offsetMs = Math.round((best.low + best.high) / 2);
  }
}
