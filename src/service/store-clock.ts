// The service's time: this server's clock (injectable) corrected by its measured offset from the database's,
// so leases, rate windows and every row's date are read on the one clock all servers on a shared store agree
// on. A server whose clock runs ahead or behind then neither refunds live work early nor keeps dead work late.

import type { Store } from '../store/index.js';

export class StoreClock {
  #offsetMs = 0;

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
   * Measures the offset again (at start, and before each lease sweep). A SQLite file has one server, whose
   * clock is the only one: nothing to measure.
   */
  async sync(): Promise<void> {
    if (this.store.engine !== 'postgres') return;
    const before = this.serverNow();
    const database = await this.store.clock();
    const after = this.serverNow();
    // The database read its clock about halfway through the round trip; whole milliseconds, as the columns are.
    this.#offsetMs = Math.round(database - (before + after) / 2);
  }
}
