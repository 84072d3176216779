// The lease sweep on a real PostgreSQL: a lease whose account's row another transaction holds (a lock time-out
// on one busy account) is passed over, and every other expired lease is still refunded; the next sweep, once the
// row is free, refunds the one passed over.

import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { openStore, type Store } from '../../../src/store/index.js';
import { freshDatabase } from '../../helpers/postgres.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('passes over a lease it cannot lock and refunds the others; the next sweep refunds it', async () => {
  const url = await freshDatabase();
  // A short lock_timeout: the busy account's refund gives up after 0.3 s instead of 5.
  const store: Store = await openStore({ engine: 'postgres', url: `${url}?lock_timeout=300` });
  cleanups.push(() => store.close());
  const busy = await store.createAccountWithKey({ plan: 'pro', credits: 5 });
  const other = await store.createAccountWithKey({ plan: 'pro', credits: 5 });
  const now = Date.now();
  // The busy account's lease expired first, so the sweep meets it first.
  expect(
    (await store.charge(busy.accountId, 1, { requestId: 'busy-1', owner: 'gone', expiresAt: now - 2000 }, now)).ok,
  ).toBe(true);
  expect(
    (await store.charge(other.accountId, 1, { requestId: 'other-1', owner: 'gone', expiresAt: now - 1000 }, now)).ok,
  ).toBe(true);

  const holder = new pg.Client(url);
  await holder.connect();
  cleanups.push(() => holder.end());
  await holder.query('BEGIN');
  await holder.query('SELECT * FROM accounts WHERE id = $1 FOR UPDATE', [busy.accountId]);

  const first = await store.expireLeases(Date.now());
  expect(first.expiredLeases).toBe(1);
  expect([(await store.balance(busy.accountId)).total, (await store.balance(other.accountId)).total]).toEqual([4, 5]);

  await holder.query('COMMIT');
  expect((await store.expireLeases(Date.now())).expiredLeases).toBe(1);
  expect((await store.balance(busy.accountId)).total).toBe(5);
});
