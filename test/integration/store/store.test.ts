// The store's contract, run against both engines: a SQLite file in a temp dir and a database of its own on the
// run's real PostgreSQL. Keys, the ledger, idempotency records, leases and their settlement, shared rate-limit
// windows, usage records; then what only one engine has (the SQLite file itself, PostgreSQL's migration lock).

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { LIMITS } from '../../../src/api/limits.js';
import { builtModule } from '../../../src/platform/built-module.js';
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from '../../../src/store/migrations.js';
import { openStore, STORE_FILE, storeTarget, type Lease, type Store } from '../../../src/store/index.js';
import { freshDatabase, pgRows } from '../../helpers/postgres.js';
import { withSqliteFile } from '../../helpers/sqlite-file.js';
import { onEachStore, storeEngines } from '../../helpers/store-matrix.js';

const T0 = 1_700_000_000_000;
const TTL = 30_000;
const lease = (requestId: string, owner = 'inst-a', expiresAt = T0 + TTL): Lease => ({ requestId, owner, expiresAt });

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-store-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
const ENGINES = storeEngines(() => dir);

onEachStore(ENGINES, (engine, at) => {
  it('migrates to the latest schema, and reopens without re-running migrations or losing data', async () => {
    expect(await at.store.schemaVersion()).toBe(at.store.latestSchemaVersion);
    expect(at.store.latestSchemaVersion).toBe(
      engine.name === 'sqlite' ? SQLITE_MIGRATIONS.length : POSTGRES_MIGRATIONS.length,
    );
    const created = await at.store.createAccountWithKey({ plan: 'pro', credits: 7, now: T0 });
    await at.store.close();
    at.store = await openStore(at.target);
    expect(await at.store.accountForKey(created.key)).toEqual({
      keyId: created.id,
      accountId: created.accountId,
      plan: 'pro',
    });
    expect(await at.store.balance(created.accountId)).toEqual({ subscription: 0, payg: 7, total: 7 });
    expect(await at.store.listKeys()).toHaveLength(1);
  });

  it('creates rmbg_ keys, shows the key once, stores only its sha256, and stops authenticating it once revoked', async () => {
    const a = await at.store.createAccountWithKey({ plan: 'enterprise', now: T0 });
    expect(a.key).toMatch(/^rmbg_[A-Za-z0-9_-]{43}$/);
    expect(a.keyPrefix).toBe(a.key.slice(0, 11));
    const [row] = await engine.rows<{ key_hash: string }>(at.target, 'SELECT key_hash FROM api_keys');
    expect(row?.key_hash).toBe(createHash('sha256').update(a.key).digest('hex'));
    expect(JSON.stringify(await at.store.listKeys())).not.toContain(a.key);

    const second = await at.store.createKey(a.accountId, T0 + 1);
    expect(await at.store.accountForKey(second.key)).toEqual({
      keyId: second.id,
      accountId: a.accountId,
      plan: 'enterprise',
    });
    expect(await at.store.accountForKey(`${a.key}x`)).toBeUndefined();
    expect((await at.store.revokeKey(a.id, T0 + 5))?.revokedAt).toBe(T0 + 5);
    expect((await at.store.revokeKey(a.id, T0 + 9))?.revokedAt).toBe(T0 + 5);
    expect(await at.store.revokeKey('key_nope')).toBeUndefined();
    expect(await at.store.accountForKey(a.key)).toBeUndefined();
    expect((await at.store.listKeys()).map((k) => [k.id, k.revokedAt])).toEqual([
      [a.id, T0 + 5],
      [second.id, null],
    ]);
    await expect(at.store.createKey('acct_missing')).rejects.toThrow(RmbgError);
    await expect(at.store.createAccount('gold' as 'pro')).rejects.toThrow(/plan must be one of pro, enterprise, free/);
  });

  it('counts key changes: each create and revoke, from any store, is one more, and the keys changed since are read back', async () => {
    const before = await at.store.keyChangeCount();
    const a = await at.store.createAccountWithKey({ plan: 'pro', now: T0 });
    const second = await openStore(at.target);
    try {
      // Two servers creating keys at once: every change gets its own number.
      const created = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 ? second : at.store).createKey(a.accountId, T0 + i)),
      );
      await second.revokeKey(a.id, T0 + 10);
      await second.revokeKey(a.id, T0 + 11); // a revocation of nothing may count; it changes no key
      const latest = await at.store.keyChangeCount();
      expect(latest - before).toBeGreaterThanOrEqual(8);
      const hash = (key: string) => createHash('sha256').update(key).digest('hex');
      const changed = await second.keysChangedSince(before);
      expect(changed).toHaveLength(7);
      expect(new Map(changed.map((change) => [change.keyHash, change.revoked]))).toEqual(
        new Map([[hash(a.key), true], ...created.map((key) => [hash(key.key), false] as const)]),
      );
      expect(await at.store.keysChangedSince(latest)).toEqual([]);
    } finally {
      await second.close();
    }
  });

  it('adds credits by account or key, charges subscription first, refuses with the balance when short', async () => {
    const a = await at.store.createAccountWithKey({ plan: 'pro', credits: 2, pool: 'subscription' });
    expect(await at.store.addCredits({ apiKey: a.key }, 5, 'payg')).toEqual({ subscription: 2, payg: 5, total: 7 });
    await expect(at.store.addCredits({ apiKey: 'rmbg_unknown' }, 1, 'payg')).rejects.toMatchObject({
      code: 'invalid_api_key',
    });
    await expect(at.store.addCredits({ accountId: a.accountId }, 0, 'payg')).rejects.toThrow(
      /credits must be a whole number from 1; got 0/,
    );
    expect(await at.store.charge(a.accountId, 3, lease('req-1'))).toEqual({
      ok: true,
      taken: { subscription: 2, payg: 1 },
    });
    expect(await at.store.charge(a.accountId, 5, lease('req-2'))).toEqual({
      ok: false,
      balance: { subscription: 0, payg: 4, total: 4 },
    });
    expect(await at.store.charge(a.accountId, 0, lease('req-3'))).toEqual({
      ok: true,
      taken: { subscription: 0, payg: 0 },
    });
    expect(await at.store.balance(a.accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });
  });

  it('never spends one credit twice, however many charges race (on PostgreSQL: over several connections)', async () => {
    const a = await at.store.createAccountWithKey({ plan: 'pro', credits: 5 });
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => at.store.charge(a.accountId, 1, lease(`race-${i}`))),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    expect((await at.store.balance(a.accountId)).total).toBe(0);
  });

  it('settles a charge once: delivered with its key succeeded, or refunded with its key failed, never both', async () => {
    const a = await at.store.createAccountWithKey({ plan: 'pro', credits: 1, pool: 'subscription' });
    await at.store.addCredits({ accountId: a.accountId }, 5, 'payg');
    const replay = { payload: Buffer.from([1, 2, 3, 255]), metadata: { width: 4 } };
    const ref = (key: string, requestId: string) => ({ accountId: a.accountId, key, requestId });

    expect(await at.store.beginIdempotent(a.accountId, 'ok', 'fp', lease('req-ok'), T0)).toEqual({ state: 'new' });
    await at.store.charge(a.accountId, 2, lease('req-ok'));
    expect(await at.store.deliver('req-ok', { ref: ref('ok', 'req-ok'), replay }, T0 + 10)).toBe(true);
    expect(await at.store.refund('req-ok', ref('ok', 'req-ok'), T0 + 11)).toEqual({
      settled: false,
      refunded: { subscription: 0, payg: 0 },
    });
    expect(await at.store.beginIdempotent(a.accountId, 'ok', 'fp', lease('req-x'), T0 + 12)).toEqual({
      state: 'succeeded',
      requestId: 'req-ok',
      completedAt: T0 + 10,
      replay,
    });

    await at.store.beginIdempotent(a.accountId, 'bad', 'fp', lease('req-bad'), T0);
    await at.store.charge(a.accountId, 3, lease('req-bad'));
    expect(await at.store.refund('req-bad', ref('bad', 'req-bad'), T0 + 1)).toEqual({
      settled: true,
      refunded: { subscription: 0, payg: 3 },
    });
    expect(await at.store.refund('req-bad', ref('bad', 'req-bad'), T0 + 2)).toEqual({
      settled: false,
      refunded: { subscription: 0, payg: 0 },
    });
    expect(await at.store.deliver('req-bad', { ref: ref('bad', 'req-bad'), replay }, T0 + 3)).toBe(false);
    expect(await at.store.beginIdempotent(a.accountId, 'bad', 'fp', lease('req-y'), T0 + 4)).toMatchObject({
      state: 'failed',
      requestId: 'req-bad',
    });
    expect(await at.store.balance(a.accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });

    const rows = await engine.rows(
      at.target,
      "SELECT kind, pool, CAST(amount AS INTEGER) AS amount FROM credit_ledger WHERE request_id = 'req-bad' ORDER BY id",
    );
    expect(rows).toEqual([
      { kind: 'charge', pool: 'payg', amount: -3 },
      { kind: 'refund', pool: 'payg', amount: 3 },
    ]);
  });

  it('idempotency: in progress, mismatch, expiry of the replay, keys per account, release of an uncharged key', async () => {
    const window = LIMITS.replayWindowMs;
    const accountId = (await at.store.createAccountWithKey({ plan: 'pro' })).accountId;
    const other = (await at.store.createAccountWithKey({ plan: 'pro' })).accountId;
    expect(await at.store.beginIdempotent(accountId, 'k1', 'fp-a', lease('req-1'), T0)).toEqual({ state: 'new' });
    expect(await at.store.beginIdempotent(accountId, 'k1', 'fp-a', lease('req-2'), T0 + 1)).toEqual({
      state: 'in_progress',
      requestId: 'req-1',
    });
    expect(await at.store.beginIdempotent(accountId, 'k1', 'fp-b', lease('req-2'), T0 + 1)).toEqual({
      state: 'mismatch',
      requestId: 'req-1',
    });
    expect((await at.store.beginIdempotent(other, 'k1', 'fp-a', lease('req-o'), T0)).state).toBe('new');

    await at.store.charge(accountId, 0, lease('req-1'));
    await at.store.deliver(
      'req-1',
      { ref: { accountId, key: 'k1', requestId: 'req-1' }, replay: { payload: Buffer.from('x'), metadata: null } },
      T0 + 100,
    );
    expect((await at.store.beginIdempotent(accountId, 'k1', 'fp-a', lease('req-3'), T0 + 100 + window - 1)).state).toBe(
      'succeeded',
    );
    expect(await at.store.beginIdempotent(accountId, 'k1', 'fp-a', lease('req-4'), T0 + 100 + window)).toEqual({
      state: 'expired',
      requestId: 'req-1',
      completedAt: T0 + 100,
    });
    expect((await at.store.purgeExpired(T0 + 100 + window - 1)).replays).toBe(0);
    expect((await at.store.purgeExpired(T0 + 100 + window)).replays).toBe(1);
    expect((await at.store.beginIdempotent(accountId, 'k1', 'fp-a', lease('req-5'), T0)).state).toBe('expired');

    await at.store.beginIdempotent(accountId, 'k2', 'fp', lease('req-6'), T0);
    // Only the request that holds the key may release it.
    await at.store.releaseIdempotent({ accountId, key: 'k2', requestId: 'someone-else' });
    expect((await at.store.beginIdempotent(accountId, 'k2', 'fp', lease('req-7'), T0)).state).toBe('in_progress');
    await at.store.releaseIdempotent({ accountId, key: 'k2', requestId: 'req-6' });
    expect((await at.store.beginIdempotent(accountId, 'k2', 'fp', lease('req-7'), T0)).state).toBe('new');
  });

  it('the same key from two stores at once (two servers): exactly one gets new', async () => {
    const accountId = (await at.store.createAccountWithKey({ plan: 'pro' })).accountId;
    const second = await openStore(at.target);
    try {
      const results = await Promise.all([
        at.store.beginIdempotent(accountId, 'race', 'fp', lease('req-a'), T0),
        second.beginIdempotent(accountId, 'race', 'fp', lease('req-b', 'inst-b'), T0),
        second.beginIdempotent(accountId, 'race', 'fp', lease('req-c', 'inst-b'), T0),
      ]);
      expect(results.map((r) => r.state).sort()).toEqual(['in_progress', 'in_progress', 'new']);
    } finally {
      await second.close();
    }
  });

  it('expired leases are settled as failed by anyone, once; renewed and settled ones are left alone', async () => {
    const a = await at.store.createAccountWithKey({ plan: 'pro', credits: 10 });
    const ref = (key: string, requestId: string) => ({ accountId: a.accountId, key, requestId });
    // A dead instance's keyed, charged request; its unkeyed charged one; its keyed one still waiting in line.
    await at.store.beginIdempotent(a.accountId, 'k-dead', 'fp', lease('dead-1', 'dead'), T0);
    await at.store.charge(a.accountId, 3, lease('dead-1', 'dead'));
    await at.store.charge(a.accountId, 2, lease('dead-2', 'dead'));
    await at.store.beginIdempotent(a.accountId, 'k-wait', 'fp', lease('dead-3', 'dead'), T0);
    // A live instance's request, renewed past the sweep; and one it delivered.
    await at.store.charge(a.accountId, 1, lease('live-1', 'live'));
    await at.store.charge(a.accountId, 1, lease('live-2', 'live'));
    await at.store.deliver('live-2', undefined, T0 + 1);
    expect(await at.store.renewLeases('live', ['live-1'], T0 + 3 * TTL)).toBe(1);
    expect((await at.store.balance(a.accountId)).total).toBe(3);

    expect(await at.store.expireLeases(T0 + TTL - 1)).toEqual({
      expiredLeases: 0,
      refundedRequests: 0,
      failedIdempotencyKeys: 0,
    });
    expect(await at.store.expireLeases(T0 + TTL)).toEqual({
      expiredLeases: 3,
      refundedRequests: 2,
      failedIdempotencyKeys: 2,
    });
    expect(await at.store.expireLeases(T0 + TTL + 1)).toEqual({
      expiredLeases: 0,
      refundedRequests: 0,
      failedIdempotencyKeys: 0,
    });
    expect((await at.store.balance(a.accountId)).total).toBe(8);
    expect((await at.store.beginIdempotent(a.accountId, 'k-dead', 'fp', lease('again'), T0 + TTL)).state).toBe(
      'failed',
    );
    expect((await at.store.beginIdempotent(a.accountId, 'k-wait', 'fp', lease('again-2'), T0 + TTL)).state).toBe(
      'failed',
    );
    // The dead instance comes back to life too late: its result is not delivered, nothing is refunded twice.
    expect(
      await at.store.deliver('dead-1', {
        ref: ref('k-dead', 'dead-1'),
        replay: { payload: Buffer.from('x'), metadata: null },
      }),
    ).toBe(false);
    expect(await at.store.refund('dead-2', undefined)).toEqual({
      settled: false,
      refunded: { subscription: 0, payg: 0 },
    });
    // The live request settles normally.
    expect(await at.store.deliver('live-1', undefined)).toBe(true);
    expect((await at.store.balance(a.accountId)).total).toBe(8);
  });

  it('rate-limit windows are counted in the store: two stores count into one window, which restarts after it ends', async () => {
    const second = await openStore(at.target);
    try {
      expect(await at.store.countRequest('key-1', T0, 60_000)).toEqual({ start: T0, count: 1 });
      expect(await second.countRequest('key-1', T0 + 10, 60_000)).toEqual({ start: T0, count: 2 });
      const burst = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 ? at.store : second).countRequest('key-1', T0 + 20, 60_000)),
      );
      expect(burst.map((w) => w.count).sort((x, y) => x - y)).toEqual([3, 4, 5, 6, 7, 8]);
      expect(await at.store.countRequest('key-2', T0 + 20, 60_000)).toEqual({ start: T0 + 20, count: 1 });
      expect(await second.countRequest('key-1', T0 + 60_000, 60_000)).toEqual({ start: T0 + 60_000, count: 1 });
    } finally {
      await second.close();
    }
  });

  it('stores usage records (reporting only) and lists them by account or request', async () => {
    const a = await at.store.createAccountWithKey({ plan: 'pro' });
    const base = {
      accountId: a.accountId,
      keyId: a.id,
      endpoint: 'removebg' as const,
      status: 200,
      code: null,
      credits: 1,
      replayed: false,
      inputBytes: 1234,
      size: 'preview',
      format: 'png',
      width: 64,
      height: 48,
      durationMs: 12.4,
      createdAt: T0,
    };
    await at.store.recordUsage({ ...base, requestId: 'req-1' });
    await at.store.recordUsage({
      ...base,
      requestId: 'req-2',
      accountId: null,
      keyId: null,
      status: 403,
      code: 'invalid_api_key',
      credits: 0,
    });
    expect(await at.store.usage({ accountId: a.accountId })).toEqual([{ ...base, requestId: 'req-1', durationMs: 12 }]);
    expect((await at.store.usage({ requestId: 'req-2' }))[0]).toMatchObject({
      status: 403,
      code: 'invalid_api_key',
      accountId: null,
    });
    expect(await at.store.usage()).toHaveLength(2);
  });
});

describe('choosing the store', () => {
  it('--store / RMBG_STORE_URL: postgres URLs, sqlite: URLs and paths; nothing means the data directory file', () => {
    expect(storeTarget(undefined, '/d', {})).toEqual({ engine: 'sqlite', path: join('/d', STORE_FILE), dataDir: true });
    expect(storeTarget(undefined, '/d', { RMBG_STORE_URL: 'postgres://u@h/db' })).toEqual({
      engine: 'postgres',
      url: 'postgres://u@h/db',
    });
    expect(storeTarget('postgresql://u@h/db', '/d', { RMBG_STORE_URL: '/x.sqlite' })).toEqual({
      engine: 'postgres',
      url: 'postgresql://u@h/db',
    });
    expect(storeTarget('sqlite:///tmp/a.sqlite', '/d', {})).toEqual({ engine: 'sqlite', path: '/tmp/a.sqlite' });
    expect(storeTarget('/tmp/b.sqlite', '/d', {})).toEqual({ engine: 'sqlite', path: '/tmp/b.sqlite' });
    expect(() => storeTarget('mysql://h/db', '/d', {})).toThrow(/postgres:\/\/ or postgresql:\/\//);
  });
});

describe('the SQLite file', () => {
  let store: Store;
  let data: string;
  beforeEach(async () => {
    data = join(dir, `file-${++files}`);
    store = await openStore(data);
  });
  afterEach(() => store.close());
  const file = () => join(data, STORE_FILE);

  it('is in WAL mode at the latest user_version, and holds neither the key nor its secret part', async () => {
    const created = await store.createAccountWithKey({ plan: 'pro', now: T0 });
    await store.close();
    await withSqliteFile(file(), (db) => {
      expect(db.userVersion()).toBe(SQLITE_MIGRATIONS.length);
      expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    });
    const bytes = Buffer.concat(
      ['', '-wal', '-shm']
        .map((suffix) => join(data, STORE_FILE + suffix))
        .filter(existsSync)
        .map((file) => readFileSync(file)),
    );
    expect(bytes.includes(created.key.slice(11))).toBe(false);
    store = await openStore(data);
  });

  it('refuses a data directory written by a newer schema', async () => {
    await store.close();
    await withSqliteFile(file(), (db) => db.exec(`PRAGMA user_version = ${SQLITE_MIGRATIONS.length + 1}`));
    await expect(openStore(data)).rejects.toThrow(/newer rmbg/);
    store = await openStore(join(dir, `other-${++files}`));
  });

  it('turns the unsettled charges and keys of a schema-1 data directory into expired leases (refunded at the next start)', async () => {
    await store.close();
    const old = join(dir, `v1-${++files}`);
    const { mkdirSync } = await import('node:fs');
    mkdirSync(old);
    await withSqliteFile(join(old, STORE_FILE), (db) =>
      db.exec(`${SQLITE_MIGRATIONS[0]} PRAGMA user_version = 1;
      INSERT INTO accounts VALUES ('acct_1', 'pro', 1);
      INSERT INTO credit_ledger (account_id, kind, pool, amount, request_id, created_at) VALUES ('acct_1', 'grant', 'payg', 10, NULL, 1),
        ('acct_1', 'charge', 'payg', -2, 'crashed', 2), ('acct_1', 'charge', 'payg', -1, 'done', 2);
      INSERT INTO usage_records (request_id, endpoint, status, credits, replayed, duration_ms, created_at) VALUES ('done', 'removebg', 200, 1, 0, 1, 3);
      INSERT INTO idempotency_keys (account_id, key, fingerprint, state, request_id, created_at) VALUES ('acct_1', 'k', 'fp', 'in_progress', 'crashed', 2);`),
    );
    store = await openStore(old);
    expect(await store.expireLeases(T0)).toEqual({ expiredLeases: 1, refundedRequests: 1, failedIdempotencyKeys: 1 });
    expect((await store.balance('acct_1')).total).toBe(9);
  });

  it('lets a second process write while this one holds the database open (its lock waited for)', async () => {
    const a = await store.createAccountWithKey({ plan: 'pro', credits: 1 });
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        // The store's own connection module (built by the run's set-up), as a second rmbg process would use it.
        `const { openSqlite } = await import(process.argv[2]); const db = await openSqlite(process.argv[1]);
         db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400);
         db.exec('COMMIT'); db.close();`,
        join(data, STORE_FILE),
        builtModule('store/sqlite-connection.js').href,
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    // Listened for now: the holder may exit while this process waits for its lock (the event loop runs meanwhile).
    const exited = new Promise((resolve) => holder.once('exit', resolve));
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    const started = Date.now();
    expect(await store.addCredits({ accountId: a.accountId }, 4, 'payg')).toEqual({
      subscription: 0,
      payg: 5,
      total: 5,
    });
    expect(Date.now() - started).toBeGreaterThan(100);
    await exited;
  });
});

describe('PostgreSQL migrations', () => {
  it('servers starting together migrate once (advisory lock) and all end at the latest schema', async () => {
    const url = await freshDatabase();
    const stores = await Promise.all(Array.from({ length: 4 }, () => openStore({ engine: 'postgres', url })));
    try {
      expect(await Promise.all(stores.map((s) => s.schemaVersion()))).toEqual(
        stores.map(() => POSTGRES_MIGRATIONS.length),
      );
      expect(await pgRows(url, 'SELECT version FROM rmbg_schema')).toEqual([{ version: POSTGRES_MIGRATIONS.length }]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('a database that cannot be reached is 503 service_unavailable with Retry-After, not a crash', async () => {
    const url = new URL(await freshDatabase());
    const store = await openStore({ engine: 'postgres', url: url.toString() });
    // Drop every connection of the store's database from outside, as a restarting server would.
    await pgRows(
      url.toString().replace(/\/[^/]+$/, '/postgres'),
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${url.pathname.slice(1)}' AND pid <> pg_backend_pid()`,
    );
    try {
      const first = await store.balance('acct_x').then(
        () => undefined,
        (error: unknown) => error,
      );
      // Idle pooled connections that the server cut surface either as an error now or not at all (reconnected).
      if (first !== undefined)
        expect(first).toMatchObject({ code: 'service_unavailable', retryAfterSeconds: expect.any(Number) });
      expect(await store.balance('acct_x')).toEqual({ subscription: 0, payg: 0, total: 0 });
    } finally {
      await store.close();
    }
    await expect(openStore({ engine: 'postgres', url: 'postgres://nobody:x@127.0.0.1:1/none' })).rejects.toMatchObject({
      code: 'io_error',
    });
  });
});
