// The SQLite connection the store opens, on whichever driver this Node uses (node:sqlite from 22.13, else
// better-sqlite3; the suite runs on both): the same rows, parameters and results from either, the driver it reports,
// and the one warning node:sqlite brings (Node 22) kept from rmbg's users while every other warning still shows.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  hasUnflaggedNodeSqlite,
  openSqlite,
  type SqliteConnection,
  sqliteSupport,
  transactionOpen,
  withoutSqliteWarning,
} from '../../../src/store/sqlite-connection.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-sqlite-connection-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
const opened: SqliteConnection[] = [];
async function fresh(): Promise<{ db: SqliteConnection; path: string }> {
  const path = join(dir, `${++files}.sqlite`);
  const db = await openSqlite(path);
  opened.push(db);
  db.exec('CREATE TABLE t (n INTEGER, s TEXT, b BLOB) STRICT');
  return { db, path };
}
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

describe('a connection', () => {
  it('uses node:sqlite where Node has it unflagged, better-sqlite3 elsewhere, and reports it for rmbg doctor', async () => {
    const driver = hasUnflaggedNodeSqlite() ? 'node:sqlite' : 'better-sqlite3';
    const { db } = await fresh();
    expect(db.driver).toBe(driver);
    expect(await sqliteSupport()).toEqual({
      available: true,
      driver,
      driverVersion: driver === 'node:sqlite' ? process.version : expect.stringMatching(/^\d+\.\d+\.\d+$/),
      sqliteVersion: expect.stringMatching(/^3\.\d+\.\d+$/),
    });
  });

  it('gives rows as plain objects with BLOBs as Buffers, binds undefined as NULL, and counts changed rows', async () => {
    const { db } = await fresh();
    const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
    expect(insert.run(1, 'one', Buffer.from('ab'))).toBe(1);
    // The store's types forbid undefined; better-sqlite3 stored NULL for it, and so does node:sqlite here.
    expect(insert.run(2, undefined as unknown as null, new Uint8Array([1, 2]))).toBe(1);
    const rows = db.prepare('SELECT * FROM t ORDER BY n').all();
    expect(rows).toStrictEqual([
      { n: 1, s: 'one', b: Buffer.from('ab') },
      { n: 2, s: null, b: Buffer.from([1, 2]) },
    ]);
    expect(rows.map((row) => Buffer.isBuffer(row.b))).toEqual([true, true]);
    expect(db.prepare('SELECT n FROM t WHERE s = ?').get('one')).toStrictEqual({ n: 1 });
    expect(db.prepare('SELECT n FROM t WHERE s = ?').get('none')).toBeUndefined();
    expect(db.prepare('UPDATE t SET n = n + 10').run()).toBe(2);
  });

  it('reads and sets user_version, and knows when a transaction is open', async () => {
    const { db } = await fresh();
    expect(db.userVersion()).toBe(0);
    db.exec('PRAGMA user_version = 7');
    expect(db.userVersion()).toBe(7);
    expect(db.inTransaction).toBe(false);
    db.exec('BEGIN IMMEDIATE');
    expect(db.inTransaction).toBe(true);
    db.exec('ROLLBACK');
    expect(db.inTransaction).toBe(false);
  });

  it('where node:sqlite cannot say (before Node 22.16), finds an open transaction without ending it', async () => {
    const { db } = await fresh();
    expect(transactionOpen(db)).toBe(false);
    expect(db.inTransaction).toBe(false);
    db.exec('BEGIN IMMEDIATE');
    db.exec("INSERT INTO t VALUES (1, 'kept', NULL)");
    expect(transactionOpen(db)).toBe(true);
    db.exec('COMMIT');
    expect(db.prepare('SELECT s FROM t').all()).toEqual([{ s: 'kept' }]);
  });

  it('opened readonly, refuses writes; closed, closes once', async () => {
    const { path } = await fresh();
    const reader = await openSqlite(path, { readonly: true });
    expect(() => reader.exec("INSERT INTO t VALUES (1, 'x', NULL)")).toThrow(/readonly/);
    expect(reader.isOpen).toBe(true);
    reader.close();
    reader.close();
    expect(reader.isOpen).toBe(false);
  });
});

describe("node:sqlite's warning", () => {
  /** The warnings process emits while `emit` runs (Node emits them on the next tick). */
  async function warningsDuring(emit: () => void): Promise<string[]> {
    const seen: string[] = [];
    const listener = (warning: Error) => seen.push(`${warning.name}: ${warning.message}`);
    process.on('warning', listener);
    try {
      emit();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listener);
    }
    return seen;
  }

  it('is dropped while node:sqlite loads; other warnings, experimental ones too, still show', async () => {
    const seen = await warningsDuring(() =>
      withoutSqliteWarning(() => {
        process.emitWarning('SQLite is an experimental feature and might change at any time', 'ExperimentalWarning');
        process.emitWarning('Fetch is an experimental feature', 'ExperimentalWarning');
        process.emitWarning('SQLite is an experimental feature (as a plain warning)');
      }),
    );
    expect(seen).toEqual([
      'ExperimentalWarning: Fetch is an experimental feature',
      'Warning: SQLite is an experimental feature (as a plain warning)',
    ]);
  });

  it('shows again once node:sqlite has loaded', async () => {
    withoutSqliteWarning(() => undefined);
    expect(
      await warningsDuring(() =>
        process.emitWarning('SQLite is an experimental feature and might change at any time', 'ExperimentalWarning'),
      ),
    ).toEqual(['ExperimentalWarning: SQLite is an experimental feature and might change at any time']);
  });
});

describe('hasUnflaggedNodeSqlite', () => {
  it.each([
    ['20.20.2', false],
    ['22.12.0', false],
    ['22.13.0', true],
    ['23.3.0', false],
    ['23.4.0', true],
    ['24.0.0', true],
    ['26.12.1', true],
  ])('Node %s: %s', (version, unflagged) => {
    expect(hasUnflaggedNodeSqlite(version)).toBe(unflagged);
  });
});
