// The two stores the store's contract runs on: a SQLite file in a temp folder, and a database of its own on the
// run's real PostgreSQL (test/helpers/postgres.ts). One list, so every matrix test runs on the same two.

import { join } from 'node:path';
import { afterEach, beforeEach, describe } from 'vitest';
import { openPostgresDriver } from '../../src/store/postgres-driver.js';
import type { SqlDriver } from '../../src/store/sql.js';
import { openSqliteDriver } from '../../src/store/sqlite-driver.js';
import { openStore, STORE_FILE, type Store, type StoreTarget } from '../../src/store/index.js';
import { freshDatabase, pgRows } from './postgres.js';
import { sqliteRows, withSqliteFile } from './sqlite-file.js';

export interface StoreEngine {
  name: 'sqlite' | 'postgres';
  /** A new, empty store location. */
  fresh(): Promise<StoreTarget>;
  /** The store's SQL driver on `target`, without the store around it. */
  driver(target: StoreTarget): Promise<SqlDriver>;
  /** Runs statements outside the store (portable SQL). */
  exec(target: StoreTarget, sql: string): Promise<void>;
  /** Rows of a query run outside the store (portable SQL only). */
  rows<T>(target: StoreTarget, sql: string): Promise<T[]>;
}

/** The SQLite file a SQLite target names. */
export const sqlitePath = (target: StoreTarget): string => (target as { path: string }).path;
const pgUrl = (target: StoreTarget) => (target as { url: string }).url;

/** Both stores, for `describe.each`; SQLite files go in `folder()` (the test file's temp folder). */
export function storeEngines(folder: () => string): StoreEngine[] {
  let files = 0;
  return [
    {
      name: 'sqlite',
      fresh: async () => ({ engine: 'sqlite', path: join(folder(), `data-${++files}`, STORE_FILE) }),
      driver: (target) => openSqliteDriver(sqlitePath(target)),
      exec: async (target, sql) => withSqliteFile(sqlitePath(target), (db) => db.exec(sql)),
      rows: async <T>(target: StoreTarget, sql: string) => sqliteRows<T>(sqlitePath(target), sql),
    },
    {
      name: 'postgres',
      fresh: async () => ({ engine: 'postgres', url: await freshDatabase() }),
      driver: (target) => openPostgresDriver(pgUrl(target)),
      exec: async (target, sql) => void (await pgRows(pgUrl(target), sql)),
      rows: <T>(target: StoreTarget, sql: string) => pgRows<T>(pgUrl(target), sql),
    },
  ];
}

/** The store each test of an `onEachStore` block gets: opened fresh before the test, closed after it. */
export interface OpenStore {
  target: StoreTarget;
  store: Store;
}

/** Runs `tests` once per engine (`describe.each`), each test on a fresh store at `at` (a test may reopen it). */
export function onEachStore(engines: StoreEngine[], tests: (engine: StoreEngine, at: OpenStore) => void): void {
  describe.each(engines)('the store on $name', (engine) => {
    const at = {} as OpenStore;
    beforeEach(async () => {
      at.target = await engine.fresh();
      at.store = await openStore(at.target);
    });
    afterEach(() => at.store.close());
    tests(engine, at);
  });
}
