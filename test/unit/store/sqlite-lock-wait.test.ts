// The SQLite store waits for another connection's write lock (a `sqlite3` shell, a backup) between turns of the
// event loop, never inside a statement: timers keep firing meanwhile, the write goes through once the lock is
// let go, and a lock held past the wait is 503 service_unavailable with Retry-After.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { isBusy, openSqlite, type SqliteConnection } from '../../../src/store/sqlite-connection.js';
import { openSqliteDriver } from '../../../src/store/sqlite-driver.js';
import type { SqlDriver } from '../../../src/store/sql.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-sqlite-lock-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const opened: Array<SqliteConnection | SqlDriver> = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

let files = 0;
/** A store's driver on a fresh file, and another connection to it that holds the write lock until told. */
async function lockedStore(lockWaitMs?: number) {
  const path = join(dir, `${++files}.sqlite`);
  const driver = await openSqliteDriver(path, { lockWaitMs });
  await driver.run('CREATE TABLE t (n INTEGER)');
  const other = await openSqlite(path, { busyTimeoutMs: 0 });
  opened.push(driver, other);
  other.exec('BEGIN IMMEDIATE');
  return { driver, release: () => other.exec('COMMIT') };
}

/** A wait for the lock inside a statement (SQLite's busy timeout, 5 s) blocks the thread, and timers with it. */
const BLOCKED_MS = 1000;
/** 'timer' when a 20 ms timer set now fires before `pending` settles, and within BLOCKED_MS. */
async function timerFiresBefore(...pending: Promise<unknown>[]): Promise<unknown> {
  const started = performance.now();
  const first = await Promise.race([...pending, new Promise((resolve) => setTimeout(resolve, 20, 'timer'))]);
  return performance.now() - started < BLOCKED_MS ? first : 'blocked';
}

it('a statement that meets another connection’s lock fails at once as busy when the busy timeout is 0', async () => {
  const path = join(dir, 'busy.sqlite');
  const [one, two] = [await openSqlite(path, { busyTimeoutMs: 0 }), await openSqlite(path, { busyTimeoutMs: 0 })];
  opened.push(one, two);
  one.exec('PRAGMA journal_mode = WAL');
  one.exec('BEGIN IMMEDIATE');
  let thrown: unknown;
  try {
    two.exec('BEGIN IMMEDIATE');
  } catch (error) {
    thrown = error;
  }
  expect(isBusy(thrown)).toBe(true);
  expect(isBusy(new Error('no such table: t'))).toBe(false);
});

it('waits for the lock with the event loop free, then commits the transaction and the lone write', async () => {
  const { driver, release } = await lockedStore();
  const transaction = driver.transaction(async (db) => db.run('INSERT INTO t VALUES (1)'));
  const write = driver.run('INSERT INTO t VALUES (2)');
  // Both still waiting for the lock while timers fire.
  expect(await timerFiresBefore(transaction, write)).toBe('timer');
  expect(await timerFiresBefore(transaction, write)).toBe('timer');
  release();
  expect(await transaction).toBe(1);
  expect(await write).toBe(1);
  expect(await driver.all('SELECT n FROM t ORDER BY n')).toEqual([{ n: 1 }, { n: 2 }]);
});

it('reads while another connection holds the write lock (WAL), without waiting for it', async () => {
  const { driver } = await lockedStore();
  expect(await driver.all('SELECT count(*) AS rows FROM t')).toEqual([{ rows: 0 }]);
});

it('answers 503 service_unavailable with Retry-After once the lock outlasts the wait, and serves again after', async () => {
  const { driver, release } = await lockedStore(200);
  const refused = await driver.transaction(async (db) => db.run('INSERT INTO t VALUES (1)')).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(RmbgError);
  expect(refused).toMatchObject({ code: 'service_unavailable', retryAfterSeconds: 2 });
  expect((refused as RmbgError).message).toMatch(/stayed locked by another process/);
  release();
  expect(await driver.run('INSERT INTO t VALUES (3)')).toBe(1);
  expect(await driver.all('SELECT n FROM t')).toEqual([{ n: 3 }]);
});
