// The SQLite store on real files in temp dirs: migrations, hashed keys, the ledger, idempotency records,
// usage records and crash recovery, as seen through the Store API and in the database file itself.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { LIMITS } from '../../../src/api/options.js';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { openStore, STORE_FILE, type Store } from '../../../src/store/index.js';

let dir: string;
let store: Store;
const T0 = 1_700_000_000_000;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-store-'));
  store = openStore(join(dir, 'data'));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function raw(): Database.Database {
  return new Database(join(dir, 'data', STORE_FILE));
}

describe('openStore and migrations', () => {
  it('creates the data directory and a WAL-mode SQLite file at the latest schema version', () => {
    expect(existsSync(join(dir, 'data', STORE_FILE))).toBe(true);
    const db = raw();
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all().map((r) => (r as { name: string }).name);
    expect(tables).toEqual(['accounts', 'api_keys', 'credit_ledger', 'idempotency_keys', 'usage_records']);
    db.close();
  });

  it('reopens an existing data directory without re-running migrations or losing data', () => {
    const created = store.createAccountWithKey({ plan: 'pro', credits: 7, now: T0 });
    store.close();
    store = openStore(join(dir, 'data'));
    store.close();
    store = openStore(join(dir, 'data'));
    expect(store.accountForKey(created.key)).toEqual({ keyId: created.id, accountId: created.accountId, plan: 'pro' });
    expect(store.balance(created.accountId)).toEqual({ subscription: 0, payg: 7, total: 7 });
    expect(store.listKeys()).toHaveLength(1);
  });

  it('refuses a data directory written by a newer schema', () => {
    store.close();
    const db = raw();
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    expect(() => openStore(join(dir, 'data'))).toThrow(/newer rmbg/);
    store = openStore(join(dir, 'other'));
  });
});

describe('API keys', () => {
  it('creates rmbg_ keys with 32 random bytes, shows the key once and stores only its sha256', () => {
    const created = store.createAccountWithKey({ plan: 'pro', now: T0 });
    expect(created.key).toMatch(/^rmbg_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(created.key.slice(5), 'base64url')).toHaveLength(32);
    expect(created.keyPrefix).toBe(created.key.slice(0, 11));
    expect(created.createdAt).toBe(T0);

    const db = raw();
    const row = db.prepare('SELECT * FROM api_keys').get() as Record<string, unknown>;
    db.close();
    expect(row['key_hash']).toBe(createHash('sha256').update(created.key).digest('hex'));
    expect(Object.values(row)).not.toContain(created.key);
    expect(JSON.stringify(store.listKeys())).not.toContain(created.key);

    // Neither the key nor its secret part appears anywhere in the database files.
    store.close();
    const files = ['', '-wal', '-shm'].map((suffix) => join(dir, 'data', STORE_FILE + suffix)).filter(existsSync);
    const bytes = Buffer.concat(files.map((file) => readFileSync(file)));
    expect(bytes.includes(created.key)).toBe(false);
    expect(bytes.includes(created.key.slice(11))).toBe(false);
    expect(bytes.includes(created.key.slice(5, 30))).toBe(false);
    store = openStore(join(dir, 'data'));
  });

  it('authenticates a key by its hash, and not after revocation', () => {
    const a = store.createAccountWithKey({ plan: 'enterprise', now: T0 });
    const second = store.createKey(a.accountId, T0 + 1);
    expect(second.key).not.toBe(a.key);
    expect(store.accountForKey(second.key)).toEqual({ keyId: second.id, accountId: a.accountId, plan: 'enterprise' });
    expect(store.accountForKey(a.key + 'x')).toBeUndefined();
    expect(store.accountForKey('rmbg_' + 'A'.repeat(43))).toBeUndefined();

    const revoked = store.revokeKey(a.id, T0 + 5);
    expect(revoked?.revokedAt).toBe(T0 + 5);
    expect(store.revokeKey(a.id, T0 + 9)?.revokedAt).toBe(T0 + 5);
    expect(store.revokeKey('key_nope')).toBeUndefined();
    expect(store.accountForKey(a.key)).toBeUndefined();
    expect(store.accountForKey(second.key)?.keyId).toBe(second.id);
    expect(store.listKeys().map((k) => [k.id, k.revokedAt])).toEqual([
      [a.id, T0 + 5],
      [second.id, null],
    ]);
  });

  it('creates keys only for existing accounts and accounts only on known plans', () => {
    expect(() => store.createKey('acct_missing')).toThrow(RmbgError);
    expect(() => store.createAccount('gold' as 'pro')).toThrow(/plan must be one of pro, enterprise, free/);
  });
});

describe('credit ledger', () => {
  it('adds credits by account id or by key, per pool', () => {
    const a = store.createAccountWithKey({ plan: 'pro', credits: 3, pool: 'subscription' });
    expect(store.addCredits({ apiKey: a.key }, 10, 'payg')).toEqual({ subscription: 3, payg: 10, total: 13 });
    expect(store.addCredits({ accountId: a.accountId }, 2, 'subscription')).toEqual({ subscription: 5, payg: 10, total: 15 });
    expect(() => store.addCredits({ apiKey: 'rmbg_unknown' }, 1, 'payg')).toThrow(expect.objectContaining({ code: 'invalid_api_key' }));
    expect(() => store.addCredits({ accountId: a.accountId }, 0, 'payg')).toThrow(/at least 1/);
    expect(() => store.addCredits({ accountId: a.accountId }, 1.5, 'payg')).toThrow(/whole number/);
    expect(store.balance(a.accountId).total).toBe(15);
  });

  it('charges subscription credits first, then pay-as-you-go, and refuses with the balance when short', () => {
    const a = store.createAccountWithKey({ plan: 'pro', credits: 2, pool: 'subscription' });
    store.addCredits({ accountId: a.accountId }, 5, 'payg');
    expect(store.charge(a.accountId, 3, 'req-1')).toEqual({ ok: true, taken: { subscription: 2, payg: 1 } });
    expect(store.balance(a.accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });
    expect(store.charge(a.accountId, 5, 'req-2')).toEqual({ ok: false, balance: { subscription: 0, payg: 4, total: 4 } });
    expect(store.charge(a.accountId, 4, 'req-3')).toEqual({ ok: true, taken: { subscription: 0, payg: 4 } });
    expect(store.balance(a.accountId).total).toBe(0);
    // A price of 0 always goes through and writes nothing.
    expect(store.charge(a.accountId, 0, 'req-4')).toEqual({ ok: true, taken: { subscription: 0, payg: 0 } });
  });

  it('refunds exactly what a charge took, per pool, once', () => {
    const a = store.createAccountWithKey({ plan: 'pro', credits: 1, pool: 'subscription' });
    store.addCredits({ accountId: a.accountId }, 5, 'payg');
    store.charge(a.accountId, 3, 'req-1');
    expect(store.refund('req-1')).toEqual({ subscription: 1, payg: 2 });
    expect(store.balance(a.accountId)).toEqual({ subscription: 1, payg: 5, total: 6 });
    expect(store.refund('req-1')).toEqual({ subscription: 0, payg: 0 });
    expect(store.refund('never-charged')).toEqual({ subscription: 0, payg: 0 });
    expect(store.balance(a.accountId)).toEqual({ subscription: 1, payg: 5, total: 6 });

    const db = raw();
    const rows = db.prepare("SELECT kind, pool, amount FROM credit_ledger WHERE request_id = 'req-1' ORDER BY id").all();
    db.close();
    expect(rows).toEqual([
      { kind: 'charge', pool: 'subscription', amount: -1 },
      { kind: 'charge', pool: 'payg', amount: -2 },
      { kind: 'refund', pool: 'subscription', amount: 1 },
      { kind: 'refund', pool: 'payg', amount: 2 },
    ]);
  });

  it('never charges one request id twice (the database refuses the second row)', () => {
    const a = store.createAccountWithKey({ plan: 'pro', credits: 5 });
    store.charge(a.accountId, 1, 'req-1');
    expect(() => store.charge(a.accountId, 1, 'req-1')).toThrow(/UNIQUE/);
    expect(store.balance(a.accountId).total).toBe(4);
  });

  it('lets a second process write while this one holds the database open (busy_timeout)', async () => {
    const a = store.createAccountWithKey({ plan: 'pro', credits: 1 });
    // Another process takes the write lock for a moment, as `rmbg keys create` would while `rmbg serve` runs.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const D = require('better-sqlite3'); const db = new D(process.argv[1]);
         db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400);
         db.exec('COMMIT'); db.close();`,
        join(dir, 'data', STORE_FILE),
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    const started = Date.now();
    expect(store.addCredits({ accountId: a.accountId }, 4, 'payg')).toEqual({ subscription: 0, payg: 5, total: 5 });
    expect(Date.now() - started).toBeGreaterThan(100);
    await new Promise((resolve) => holder.once('exit', resolve));
  });
});

describe('idempotency records', () => {
  const window = LIMITS.replayWindowMs;
  const replay = { payload: Buffer.from([1, 2, 3, 255]), metadata: { width: 4 } };
  let accountId: string;
  beforeEach(() => {
    accountId = store.createAccountWithKey({ plan: 'pro' }).accountId;
  });

  it('goes new → in_progress → succeeded (with its replay) → expired, and reports mismatches', () => {
    expect(store.beginIdempotent(accountId, 'k1', 'fp-a', 'req-1', T0)).toEqual({ state: 'new' });
    expect(store.beginIdempotent(accountId, 'k1', 'fp-a', 'req-2', T0 + 1)).toEqual({ state: 'in_progress', requestId: 'req-1' });
    expect(store.beginIdempotent(accountId, 'k1', 'fp-b', 'req-2', T0 + 1)).toEqual({ state: 'mismatch', requestId: 'req-1' });

    store.completeIdempotent({ accountId, key: 'k1', requestId: 'req-1' }, replay, T0 + 100);
    expect(store.beginIdempotent(accountId, 'k1', 'fp-a', 'req-3', T0 + 100 + window - 1)).toEqual({
      state: 'succeeded',
      requestId: 'req-1',
      completedAt: T0 + 100,
      replay,
    });
    expect(store.beginIdempotent(accountId, 'k1', 'fp-b', 'req-3', T0 + 200)).toEqual({ state: 'mismatch', requestId: 'req-1' });
    expect(store.beginIdempotent(accountId, 'k1', 'fp-a', 'req-4', T0 + 100 + window)).toEqual({ state: 'expired', requestId: 'req-1', completedAt: T0 + 100 });
  });

  it('keys are per account: the same key in another account is a new request', () => {
    const other = store.createAccountWithKey({ plan: 'pro' }).accountId;
    expect(store.beginIdempotent(accountId, 'k1', 'fp', 'req-1', T0).state).toBe('new');
    expect(store.beginIdempotent(other, 'k1', 'fp', 'req-2', T0).state).toBe('new');
  });

  it('a failed key stays reserved; a released key can be used again', () => {
    store.beginIdempotent(accountId, 'k1', 'fp', 'req-1', T0);
    store.failIdempotent({ accountId, key: 'k1', requestId: 'req-1' }, T0 + 5);
    expect(store.beginIdempotent(accountId, 'k1', 'fp', 'req-2', T0 + window * 10)).toEqual({ state: 'failed', requestId: 'req-1', completedAt: T0 + 5 });

    store.beginIdempotent(accountId, 'k2', 'fp', 'req-3', T0);
    // Only the request that holds the key may release it.
    store.releaseIdempotent({ accountId, key: 'k2', requestId: 'someone-else' });
    expect(store.beginIdempotent(accountId, 'k2', 'fp', 'req-4', T0).state).toBe('in_progress');
    store.releaseIdempotent({ accountId, key: 'k2', requestId: 'req-3' });
    expect(store.beginIdempotent(accountId, 'k2', 'fp', 'req-4', T0).state).toBe('new');
  });

  it('a key one connection reserved is seen as in progress by another connection: only the first gets new', () => {
    const second = openStore(join(dir, 'data'));
    try {
      const results = [
        store.beginIdempotent(accountId, 'race', 'fp', 'req-a', T0),
        second.beginIdempotent(accountId, 'race', 'fp', 'req-b', T0),
        second.beginIdempotent(accountId, 'race', 'fp', 'req-c', T0),
      ];
      expect(results.map((r) => r.state)).toEqual(['new', 'in_progress', 'in_progress']);
    } finally {
      second.close();
    }
  });

  it('purges replay payloads after the window but keeps the row, so the key stays reserved', () => {
    store.beginIdempotent(accountId, 'old', 'fp', 'req-1', T0);
    store.completeIdempotent({ accountId, key: 'old', requestId: 'req-1' }, replay, T0);
    store.beginIdempotent(accountId, 'new', 'fp', 'req-2', T0);
    store.completeIdempotent({ accountId, key: 'new', requestId: 'req-2' }, replay, T0 + 60_000);

    expect(store.purgeExpiredReplays(T0 + window - 1)).toBe(0);
    expect(store.purgeExpiredReplays(T0 + window)).toBe(1);
    expect(store.purgeExpiredReplays(T0 + window)).toBe(0);

    const db = raw();
    const rows = db.prepare('SELECT key, state, payload IS NULL AS purged FROM idempotency_keys ORDER BY key').all();
    db.close();
    expect(rows).toEqual([
      { key: 'new', state: 'succeeded', purged: 0 },
      { key: 'old', state: 'succeeded', purged: 1 },
    ]);
    expect(store.beginIdempotent(accountId, 'old', 'fp', 'req-3', T0 + window).state).toBe('expired');
    expect(store.beginIdempotent(accountId, 'new', 'fp', 'req-4', T0 + window).state).toBe('succeeded');
  });

  it('refunds a failed request and fails its key in one step', () => {
    const a = store.createAccountWithKey({ plan: 'pro', credits: 3 });
    store.beginIdempotent(a.accountId, 'k', 'fp', 'req-1', T0);
    store.charge(a.accountId, 2, 'req-1');
    expect(store.failRequest('req-1', { accountId: a.accountId, key: 'k', requestId: 'req-1' }, T0 + 1)).toEqual({ subscription: 0, payg: 2 });
    expect(store.balance(a.accountId).total).toBe(3);
    expect(store.beginIdempotent(a.accountId, 'k', 'fp', 'req-2', T0 + 2).state).toBe('failed');
  });
});

describe('usage records and crash recovery', () => {
  it('stores request metadata and lists it by account or request', () => {
    const a = store.createAccountWithKey({ plan: 'pro' });
    const base = {
      accountId: a.accountId, keyId: a.id, endpoint: 'removebg' as const, status: 200, code: null, credits: 1, replayed: false,
      inputBytes: 1234, size: 'preview', format: 'png', width: 64, height: 48, durationMs: 12.4, createdAt: T0,
    };
    store.recordUsage({ ...base, requestId: 'req-1' });
    store.recordUsage({ ...base, requestId: 'req-2', accountId: null, keyId: null, status: 403, code: 'invalid_api_key', credits: 0 });
    expect(store.usage({ accountId: a.accountId })).toEqual([{ ...base, requestId: 'req-1', durationMs: 12 }]);
    expect(store.usage({ requestId: 'req-2' })[0]).toMatchObject({ status: 403, code: 'invalid_api_key', accountId: null });
    expect(store.usage()).toHaveLength(2);
  });

  it('refunds charges of requests that never finished and fails their keys', () => {
    const a = store.createAccountWithKey({ plan: 'pro', credits: 10 });
    const finished = { accountId: a.accountId, keyId: a.id, endpoint: 'removebg' as const, status: 200, code: null, credits: 1, replayed: false,
      inputBytes: null, size: null, format: null, width: null, height: null, durationMs: 1, createdAt: T0 };
    store.charge(a.accountId, 1, 'done');
    store.recordUsage({ ...finished, requestId: 'done' });
    store.charge(a.accountId, 2, 'refunded');
    store.refund('refunded');
    store.recordUsage({ ...finished, requestId: 'refunded', status: 502, credits: 0 });
    store.beginIdempotent(a.accountId, 'k', 'fp', 'crashed', T0);
    store.charge(a.accountId, 3, 'crashed');
    expect(store.balance(a.accountId).total).toBe(6);

    expect(store.recoverInterrupted(T0 + 1)).toEqual({ refundedRequests: 1, failedIdempotencyKeys: 1 });
    expect(store.balance(a.accountId).total).toBe(9);
    expect(store.beginIdempotent(a.accountId, 'k', 'fp', 'again', T0 + 2).state).toBe('failed');
    expect(store.recoverInterrupted(T0 + 3)).toEqual({ refundedRequests: 0, failedIdempotencyKeys: 0 });
    expect(store.balance(a.accountId).total).toBe(9);
  });
});
