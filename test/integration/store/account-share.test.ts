// One busy account cannot hold the pool: its charges wait for its row one after the other anyway, so past its
// share they wait in memory, not each on a pooled connection. On a real PostgreSQL with a pool of 4 and no
// lock_timeout, another account is charged while the busy account's row is held.

import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { openStore, type Store } from '../../../src/store/index.js';
import { freshDatabase } from '../../helpers/postgres.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("another account is charged while one account's row is held and its charges outnumber the pool", async () => {
  const url = await freshDatabase();
  const store: Store = await openStore({
    engine: 'postgres',
    url: `${url}?pool_size=4&lock_timeout=0&connect_timeout=1`,
  });
  cleanups.push(() => store.close());
  const busy = await store.createAccountWithKey({ plan: 'pro', credits: 10 });
  const other = await store.createAccountWithKey({ plan: 'pro', credits: 10 });
  const holder = new pg.Client(url);
  await holder.connect();
  cleanups.push(() => holder.end());
  await holder.query('BEGIN');
  await holder.query('SELECT * FROM accounts WHERE id = $1 FOR UPDATE', [busy.accountId]);

  const lease = (requestId: string) => ({ requestId, owner: 'test', expiresAt: Date.now() + 60_000 });
  const waiting = Array.from({ length: 6 }, (_, i) =>
    store.charge(busy.accountId, 1, lease(`busy-${i}`), Date.now()).then(
      (result) => result.ok,
      () => false,
    ),
  );
  // Without a share, the busy account's charges hold all 4 connections and this one waits past connect_timeout.
  expect((await store.charge(other.accountId, 1, lease('other-1'), Date.now())).ok).toBe(true);

  await holder.query('COMMIT');
  const charged = (await Promise.all(waiting)).filter(Boolean).length;
  expect(charged).toBeGreaterThanOrEqual(2);
  expect((await store.balance(busy.accountId)).total).toBe(10 - charged);
  expect((await store.balance(other.accountId)).total).toBe(9);
});
