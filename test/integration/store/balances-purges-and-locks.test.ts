// The store under scale-out (issue #20), on both engines where the behaviour is both engines': balances kept
// with the ledger and audited against it, old idempotency and usage records deleted, a key released while
// another request looks it up, the start-up sweep's dates, reading a settlement back. Then what only
// PostgreSQL has: connection timeouts from the store URL, the sweep passing over a lease another transaction
// holds, the account lock leaving foreign-key checks alone, and a held-up or exhausted pool answered as 503.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../../src/api/limits.js';
import { createStore } from '../../../src/store/create-store.js';
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from '../../../src/store/migrations.js';
import { openPostgresDriver } from '../../../src/store/postgres-driver.js';
import type { SqlDriver } from '../../../src/store/sql.js';
import { PURGE_BATCH, PURGE_MAX_BATCHES } from '../../../src/store/idempotency-records.js';
import { USAGE_RETENTION_MS } from '../../../src/store/usage-records.js';
import { openStore, type Lease, type Store, type UsageRecord } from '../../../src/store/index.js';
import { openRequest } from '../../../src/service/request-lifecycle.js';
import type { ServiceContext } from '../../../src/service/service-context.js';
import { freshDatabase, pgRows } from '../../helpers/postgres.js';
import { onEachStore, sqlitePath, storeEngines } from '../../helpers/store-matrix.js';
import { rejectionOf } from '../../helpers/rejection.js';

const T0 = 1_700_000_000_000;
const lease = (requestId: string, expiresAt = T0 + 30_000): Lease => ({ requestId, owner: 'inst-a', expiresAt });

/** The usage record a GET /v1.0/account opens with at `createdAt`, as the service makes it (it reads only the clock). */
const accountUsage = (requestId: string, createdAt: number): UsageRecord =>
  openRequest({ now: () => createdAt } as ServiceContext, { apiKey: undefined, requestId, endpoint: 'account' }).usage;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-store-balances-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ENGINES = storeEngines(() => dir);

onEachStore(ENGINES, (engine, at) => {
  it('keeps each balance with its ledger rows; the audit finds them equal, and finds a balance changed behind its back', async () => {
    const a = await at.store.createAccountWithKey({ plan: 'pro', credits: 4, pool: 'subscription', now: T0 });
    await at.store.addCredits({ accountId: a.accountId }, 6, 'payg', T0);
    await at.store.charge(a.accountId, 5, lease('r1'), T0);
    await at.store.charge(a.accountId, 2, lease('r2'), T0);
    await at.store.refund('r2', undefined, T0);
    await at.store.deliver('r1', undefined, T0);
    expect(await at.store.balance(a.accountId)).toEqual({ subscription: 0, payg: 5, total: 5 });
    const sums = await engine.rows<{ pool: string; sum: number }>(
      at.target,
      `SELECT pool, CAST(SUM(amount) AS INTEGER) AS sum FROM credit_ledger GROUP BY pool ORDER BY pool`,
    );
    expect(sums.map((row) => [row.pool, Number(row.sum)])).toEqual([
      ['payg', 5],
      ['subscription', 0],
    ]);
    expect(await at.store.auditBalances()).toEqual([]);

    await engine.exec(at.target, `UPDATE accounts SET payg_credits = payg_credits + 1 WHERE id = '${a.accountId}'`);
    expect(await at.store.auditBalances()).toEqual([
      {
        accountId: a.accountId,
        kept: { subscription: 0, payg: 6, total: 6 },
        ledger: { subscription: 0, payg: 5, total: 5 },
      },
    ]);
  });

  it("docs/deploy.md's audit query finds a balance off in one pool only, and its repair sets it to the ledger's sums", async () => {
    const blocks = [
      ...readFileSync(new URL('../../../docs/deploy.md', import.meta.url), 'utf8').matchAll(/```sql\n([\s\S]*?)```/g),
    ].map((match) => match[1] as string);
    const audit = blocks.find((sql) => sql.startsWith('SELECT a.id')) as string;
    const repair = blocks.find((sql) => sql.startsWith('UPDATE accounts')) as string;
    const a = await at.store.createAccountWithKey({ plan: 'pro', credits: 4, pool: 'subscription', now: T0 });
    await at.store.addCredits({ accountId: a.accountId }, 6, 'payg', T0);
    // One pool up, the other down: the total still matches the ledger's.
    await engine.exec(
      at.target,
      `UPDATE accounts SET payg_credits = payg_credits + 1, subscription_credits = subscription_credits - 1 WHERE id = '${a.accountId}'`,
    );
    const found = await engine.rows<{ id: string; ledger_payg: number }>(at.target, audit);
    expect(found.map((row) => [row.id, Number(row.ledger_payg)])).toEqual([[a.accountId, 6]]);
    await engine.exec(at.target, repair);
    expect(await engine.rows(at.target, audit)).toEqual([]);
    expect(await at.store.balance(a.accountId)).toEqual({ subscription: 4, payg: 6, total: 10 });
  });

  it('a database at schema 2 migrates its balances from the ledger (the sums, per pool)', async () => {
    await at.store.close();
    const old = await engine.fresh();
    if (old.engine === 'sqlite') {
      const { mkdirSync } = await import('node:fs');
      mkdirSync(join(sqlitePath(old), '..'), { recursive: true });
      await engine.exec(old, `${SQLITE_MIGRATIONS[0]}${SQLITE_MIGRATIONS[1]} PRAGMA user_version = 2;`);
    } else {
      await engine.exec(
        old,
        `${POSTGRES_MIGRATIONS[0]}${POSTGRES_MIGRATIONS[1]} CREATE TABLE rmbg_schema (version INTEGER NOT NULL); INSERT INTO rmbg_schema VALUES (2);`,
      );
    }
    await engine.exec(
      old,
      `INSERT INTO accounts (id, plan, created_at) VALUES ('acct_1', 'pro', 1), ('acct_2', 'pro', 1);
       INSERT INTO credit_ledger (account_id, kind, pool, amount, request_id, created_at) VALUES
         ('acct_1', 'grant', 'payg', 10, NULL, 1), ('acct_1', 'grant', 'subscription', 3, NULL, 1),
         ('acct_1', 'charge', 'subscription', -3, 'x', 2), ('acct_1', 'charge', 'payg', -1, 'x', 2), ('acct_1', 'refund', 'payg', 1, 'x', 3);`,
    );
    at.store = await openStore(old);
    expect(await at.store.balance('acct_1')).toEqual({ subscription: 0, payg: 10, total: 10 });
    expect(await at.store.balance('acct_2')).toEqual({ subscription: 0, payg: 0, total: 0 });
    expect(await at.store.auditBalances()).toEqual([]);
  });

  it('deletes replays after their window, completed keys after the key retention (the key is free again), usage records after theirs', async () => {
    const accountId = (await at.store.createAccountWithKey({ plan: 'pro', credits: 5, now: T0 })).accountId;
    const replay = { payload: Buffer.from('x'), metadata: null };
    await at.store.beginIdempotent(accountId, 'done', 'fp', lease('r-done'), T0);
    await at.store.deliver('r-done', { ref: { accountId, key: 'done', requestId: 'r-done' }, replay }, T0);
    await at.store.beginIdempotent(accountId, 'running', 'fp', lease('r-run'), T0);
    await at.store.recordUsage({ ...accountUsage('u-old', T0), accountId });
    await at.store.recordUsage({ ...accountUsage('u-new', T0 + USAGE_RETENTION_MS), accountId });

    expect(await at.store.purgeExpired(T0 + LIMITS.replayWindowMs)).toEqual({ replays: 1, keys: 0, usageRecords: 0 });
    expect(
      (await at.store.beginIdempotent(accountId, 'done', 'fp', lease('r-again'), T0 + LIMITS.replayWindowMs)).state,
    ).toBe('expired');
    const retention = T0 + LIMITS.idempotencyKeyRetentionMs;
    expect(await at.store.purgeExpired(retention - 1)).toEqual({ replays: 0, keys: 0, usageRecords: 0 });
    expect(await at.store.purgeExpired(retention)).toEqual({ replays: 0, keys: 1, usageRecords: 0 });
    // The key in progress is its lease's: never deleted by age.
    expect((await at.store.beginIdempotent(accountId, 'running', 'fp', lease('r-x'), retention)).state).toBe(
      'in_progress',
    );
    expect((await at.store.beginIdempotent(accountId, 'done', 'fp', lease('r-later'), retention)).state).toBe('new');
    expect(await at.store.purgeExpired(T0 + USAGE_RETENTION_MS)).toMatchObject({ usageRecords: 1 });
    expect((await at.store.usage()).map((record) => record.requestId)).toEqual(['u-new']);
  });

  it('deletes a backlog a bounded number of batches per run, the rest at the next run', async () => {
    const backlog = PURGE_BATCH * PURGE_MAX_BATCHES + 1;
    await engine.exec(
      at.target,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${backlog})
      INSERT INTO usage_records (request_id, endpoint, status, credits, replayed, duration_ms, created_at)
      SELECT 'u-' || i, 'account', 200, 0, 0, 1, ${T0} FROM n`,
    );
    expect(await at.store.purgeExpired(T0 + USAGE_RETENTION_MS)).toMatchObject({ usageRecords: backlog - 1 });
    expect(await at.store.purgeExpired(T0 + USAGE_RETENTION_MS)).toMatchObject({ usageRecords: 1 });
  });

  it('a key released between the insert that found it and the read: the key is taken, not a 500', async () => {
    const accountId = (await at.store.createAccountWithKey({ plan: 'pro', now: T0 })).accountId;
    await at.store.beginIdempotent(accountId, 'k', 'fp', lease('holder'), T0);
    // The key's row disappears exactly between beginIdempotent's two statements, as when its holder releases it
    // then (PostgreSQL reads each statement with a new snapshot).
    const driver = await engine.driver(at.target);
    let released = false;
    const racing: SqlDriver = {
      ...driver,
      transaction: (fn) =>
        driver.transaction((tx) =>
          fn({
            ...tx,
            all: async (sql, params) => {
              if (!released && sql.startsWith('SELECT fingerprint')) {
                released = true;
                await tx.run("DELETE FROM idempotency_keys WHERE key = 'k'");
              }
              return tx.all(sql, params);
            },
          }),
        ),
    };
    const second = createStore(racing, at.store.latestSchemaVersion);
    try {
      expect(await second.beginIdempotent(accountId, 'k', 'fp', lease('second'), T0 + 1)).toEqual({ state: 'new' });
      expect(released).toBe(true);
    } finally {
      await second.close();
    }
  });

  it("the sole server's start-up sweep settles every lease, dating its refunds and failed keys now (not the year 287,000)", async () => {
    const accountId = (await at.store.createAccountWithKey({ plan: 'pro', credits: 3, now: T0 })).accountId;
    await at.store.beginIdempotent(accountId, 'k', 'fp', lease('r1', T0 + 60_000), T0);
    await at.store.charge(accountId, 2, lease('r1', T0 + 60_000), T0);
    expect(await at.store.expireLeases(T0 + 5, { all: true })).toEqual({
      expiredLeases: 1,
      refundedRequests: 1,
      failedIdempotencyKeys: 1,
    });
    expect((await at.store.balance(accountId)).total).toBe(3);
    const [refund] = await engine.rows<{ created_at: number }>(
      at.target,
      "SELECT created_at FROM credit_ledger WHERE kind = 'refund'",
    );
    const [key] = await engine.rows<{ completed_at: number }>(at.target, 'SELECT completed_at FROM idempotency_keys');
    expect([Number(refund?.created_at), Number(key?.completed_at)]).toEqual([T0 + 5, T0 + 5]);
  });

  it('reads back where a charged request stands: leased, delivered, refunded', async () => {
    const accountId = (await at.store.createAccountWithKey({ plan: 'pro', credits: 3, now: T0 })).accountId;
    await at.store.charge(accountId, 1, lease('ok'), T0);
    await at.store.charge(accountId, 1, lease('bad'), T0);
    expect(await at.store.settlementOf('ok')).toBe('leased');
    await at.store.deliver('ok', undefined, T0);
    await at.store.refund('bad', undefined, T0);
    expect([await at.store.settlementOf('ok'), await at.store.settlementOf('bad')]).toEqual(['delivered', 'refunded']);
  });

  it('a result delivered without a key keeps its lease until sent: its server killed, the sweep refunds it once', async () => {
    const accountId = (await at.store.createAccountWithKey({ plan: 'pro', credits: 3, now: T0 })).accountId;
    for (const id of ['killed', 'sent', 'left']) await at.store.charge(accountId, 1, lease(id, T0 + 1000), T0);
    for (const id of ['killed', 'sent', 'left']) expect(await at.store.holdDelivered(id, T0)).toBe(true);
    expect(await at.store.settlementOf('killed')).toBe('delivered');
    // The immediate refund of a failure leaves a held result alone: it may be on its way to the client.
    expect((await at.store.refund('killed', undefined, T0)).settled).toBe(false);
    // Sent: deliver closes it. The client left first: refunded.
    expect(await at.store.deliver('sent', undefined, T0)).toBe(true);
    expect((await at.store.refundUnreceived('left', T0)).settled).toBe(true);
    expect((await at.store.balance(accountId)).total).toBe(1);
    // 'killed''s server died before its answer was sent: any server's sweep refunds it, once.
    expect(await at.store.expireLeases(T0 + 2000)).toEqual({
      expiredLeases: 1,
      refundedRequests: 1,
      failedIdempotencyKeys: 0,
    });
    expect(await at.store.expireLeases(T0 + 3000)).toEqual({
      expiredLeases: 0,
      refundedRequests: 0,
      failedIdempotencyKeys: 0,
    });
    expect((await at.store.refundUnreceived('killed', T0)).settled).toBe(false);
    expect(await at.store.balance(accountId)).toEqual({ subscription: 0, payg: 2, total: 2 });
    expect(await at.store.settlementOf('killed')).toBe('refunded');
    expect(await at.store.holdDelivered('killed', T0)).toBe(false);
  });
});

describe('PostgreSQL connections', () => {
  let url: string;
  const stores: Store[] = [];
  const clients: pg.Client[] = [];
  beforeAll(async () => {
    url = await freshDatabase();
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.end().catch(() => {});
    for (const store of stores.splice(0)) await store.close();
  });
  const withParams = (params: Record<string, number>) => {
    const u = new URL(url);
    for (const [name, value] of Object.entries(params)) u.searchParams.set(name, String(value));
    return u.toString();
  };
  const open = async (params: Record<string, number> = {}) => {
    const store = await openStore({ engine: 'postgres', url: withParams(params) });
    stores.push(store);
    return store;
  };
  /** A transaction of someone else's (another server), holding locks until ended. */
  const outsider = async () => {
    const client = new pg.Client(url);
    await client.connect();
    clients.push(client);
    await client.query('BEGIN');
    return client;
  };

  it('every connection has the timeouts: defaults, or the values of the store URL; a bad value is refused', async () => {
    const show = async (driver: SqlDriver) => {
      const names = ['statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout'];
      const values: unknown[] = [];
      for (const name of names)
        values.push(Object.values((await driver.all<Record<string, string>>(`SHOW ${name}`))[0]!)[0]);
      await driver.close();
      return values;
    };
    expect(await show(await openPostgresDriver(url))).toEqual(['15s', '5s', '10s']);
    expect(
      await show(
        await openPostgresDriver(
          withParams({ statement_timeout: 2500, lock_timeout: 0, idle_in_transaction_session_timeout: 60_000 }),
        ),
      ),
    ).toEqual(['2500ms', '0', '1min']);
    // 0 is off, even where the database (or the role) sets a timeout of its own.
    const strict = await freshDatabase();
    for (const setting of ["lock_timeout = '7s'", "statement_timeout = '9s'"])
      await pgRows(strict, `ALTER DATABASE ${new URL(strict).pathname.slice(1)} SET ${setting}`);
    expect(await show(await openPostgresDriver(`${strict}?lock_timeout=0&statement_timeout=0`))).toEqual([
      '0',
      '0',
      '10s',
    ]);
    const refused = await rejectionOf(openStore({ engine: 'postgres', url: `${url}?lock_timeout=5s` }));
    expect([refused.code, refused.message]).toEqual([
      'usage_error',
      "the store URL's lock_timeout must be a whole number from 0 to 2147483647; got '5s'",
    ]);
  });

  it('the sweep passes over an expired lease another transaction holds, settles the rest, and settles that one once it is free', async () => {
    const store = await open();
    const accountId = (await store.createAccountWithKey({ plan: 'pro', credits: 5, now: T0 })).accountId;
    await store.charge(accountId, 1, lease('held', T0), T0);
    await store.charge(accountId, 1, lease('free', T0), T0);
    const other = await outsider();
    await other.query("SELECT * FROM leases WHERE request_id = 'held' FOR UPDATE");
    expect(await store.expireLeases(T0 + 1)).toEqual({
      expiredLeases: 1,
      refundedRequests: 1,
      failedIdempotencyKeys: 0,
    });
    expect(await store.settlementOf('held')).toBe('leased');
    await other.query('COMMIT');
    expect(await store.expireLeases(T0 + 1)).toEqual({
      expiredLeases: 1,
      refundedRequests: 1,
      failedIdempotencyKeys: 0,
    });
    expect((await store.balance(accountId)).total).toBe(5);
  });

  it("an account's lock does not block the foreign-key checks of its new keys' and leases' rows", async () => {
    const store = await open();
    const accountId = (await store.createAccountWithKey({ plan: 'pro', credits: 5, now: T0 })).accountId;
    await store.beginIdempotent(accountId, 'k1', 'fp', lease('r1'), T0);
    // The charge of r1 locks the account, then waits for r1's lease, which another transaction holds.
    const other = await outsider();
    await other.query("SELECT * FROM leases WHERE request_id = 'r1' FOR UPDATE");
    const charge = store.charge(accountId, 1, lease('r1'), T0);
    await expect
      .poll(() =>
        pgRows(
          url,
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO leases%' AND datname = current_database()",
        ),
      )
      .toHaveLength(1);
    // Meanwhile another request of the account reserves its key and opens its lease (both rows reference the account).
    expect(await store.beginIdempotent(accountId, 'k2', 'fp', lease('r2'), T0)).toEqual({ state: 'new' });
    await other.query('COMMIT');
    expect(await charge).toEqual({ ok: true, taken: { subscription: 0, payg: 1 } });
  });

  it('a lock held past lock_timeout, and a pool with no free connection within connect_timeout, are 503 with Retry-After', async () => {
    const store = await open({ lock_timeout: 200, pool_size: 1, connect_timeout: 1 });
    const accountId = (await store.createAccountWithKey({ plan: 'pro', credits: 5, now: T0 })).accountId;
    const other = await outsider();
    await other.query(`SELECT * FROM accounts WHERE id = '${accountId}' FOR UPDATE`);
    const heldUp = await rejectionOf(store.charge(accountId, 1, lease('r1'), T0));
    expect([heldUp.code, heldUp.retryAfterSeconds]).toEqual(['service_unavailable', 2]);

    // The pool's one connection waits in the lease's lock (no lock_timeout on this one, so it waits).
    await other.query('ROLLBACK');
    const patient = await open({ lock_timeout: 0, pool_size: 1, connect_timeout: 1 });
    await patient.charge(accountId, 1, lease('r2'), T0);
    await other.query('BEGIN');
    await other.query("SELECT * FROM leases WHERE request_id = 'r2' FOR UPDATE");
    const waiting = patient.refund('r2', undefined, T0);
    const exhausted = await rejectionOf(patient.balance(accountId));
    expect([exhausted.code, exhausted.retryAfterSeconds]).toEqual(['service_unavailable', 2]);
    await other.query('COMMIT');
    expect(await waiting).toEqual({ settled: true, refunded: { subscription: 0, payg: 1 } });
  });
});
