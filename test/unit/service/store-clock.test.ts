// The service's clock is this server's corrected by its offset from the database's, measured from one reading
// of the database's clock halfway through the round trip. A reading that waited (for a connection of a busy
// pool, say) is off by up to half its round trip: the quickest recent reading that agrees with it is kept.

import { describe, expect, it } from 'vitest';
import { StoreClock } from '../../../src/service/store-clock.js';

/** A database 10 s ahead of this server, answering after `waitMs` (all of it before it reads its clock). */
function fakeDatabase() {
  let serverTime = 1_000_000;
  const readings: number[] = [];
  const database = {
    waitMs: 2,
    engine: 'postgres' as const,
    clock: async () => {
      // A connection of the pool is free only after the wait; the database reads its clock on arrival.
      serverTime += database.waitMs;
      const reading = serverTime + 10_000;
      serverTime += 2;
      readings.push(reading);
      return reading;
    },
  };
  return { database, serverNow: () => serverTime };
}

describe("the database's clock", () => {
  it('a reading with a long round trip (a wait for a pool connection) leaves the offset as it was', async () => {
    const { database, serverNow } = fakeDatabase();
    const clock = new StoreClock(database, serverNow);
    await clock.sync();
    expect(clock.now() - serverNow()).toBe(10_000);
    database.waitMs = 4000;
    await clock.sync();
    expect(clock.now() - serverNow()).toBe(10_000);
    database.waitMs = 2;
    await clock.sync();
    expect(clock.now() - serverNow()).toBe(10_000);
  });

  it('the first reading is taken whatever its round trip (nothing better yet), then replaced by a quick one', async () => {
    const { database, serverNow } = fakeDatabase();
    database.waitMs = 4000;
    const clock = new StoreClock(database, serverNow);
    await clock.sync();
    // Read 2 ms before the end of a 4,002 ms round trip, taken for its middle: 1,999 ms off.
    expect(clock.now() - serverNow()).toBe(10_000 + 1999);
    database.waitMs = 2;
    await clock.sync();
    expect(clock.now() - serverNow()).toBe(10_000);
  });

  it('after a move to a farther database, its round trips become the measure: a later step of this clock is corrected', async () => {
    const { database, serverNow } = fakeDatabase();
    let step = 0;
    const clock = new StoreClock(database, () => serverNow() + step);
    await clock.sync();
    expect(clock.now() - serverNow()).toBe(10_000);
    // The database moved farther away (every round trip ~100 ms, 50 times the best so far); then this server's
    // clock stepped 5 s ahead. The readings come back within 8 syncs (one a sweep) and the step is corrected.
    database.waitMs = 100;
    step = 5000;
    for (let sync = 0; sync < 8; sync++) await clock.sync();
    // Correct to within half a round trip: the database 10 s ahead of the true time, this clock 5 s.
    expect(Math.abs(clock.now() - serverNow() - 10_000)).toBeLessThanOrEqual(51);
  });
});
