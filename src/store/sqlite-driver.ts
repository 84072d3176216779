// The SQLite engine: one connection (sqlite-connection.ts: node:sqlite or better-sqlite3) to a file in WAL mode,
// migrated on open. Its calls are synchronous, so an asynchronous transaction would let another request's
// statements run inside it: every call takes its turn on the file's queue, and a transaction holds the queue from
// BEGIN IMMEDIATE to COMMIT.

import { dirname } from 'node:path';
import { RmbgError, messageOf } from '../api/errors.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
import { makeCompanionsPrivate, preparePrivateFiles } from './private-files.js';
import type { SqlDriver, SqlExecutor, SqlValue } from './sql.js';
import { openSqlite, type SqliteConnection, type SqliteStatement } from './sqlite-connection.js';

/** How long a write waits for another process's write (e.g. `rmbg keys create` while `rmbg serve` runs). */
const BUSY_TIMEOUT_MS = 5000;

/** Runs `work` in a BEGIN IMMEDIATE transaction: committed when it returns, rolled back when it throws. */
function immediately<T>(db: SqliteConnection, work: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = work();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

function migrate(db: SqliteConnection): void {
  immediately(db, () => {
    // Read inside the write transaction: a second process that opened meanwhile sees the result, not a stale version.
    const current = db.userVersion();
    if (current > SQLITE_MIGRATIONS.length) {
      throw new RmbgError(
        'io_error',
        `the data directory was written by a newer rmbg (schema ${current}; this version knows ${SQLITE_MIGRATIONS.length})`,
      );
    }
    for (let version = current; version < SQLITE_MIGRATIONS.length; version++)
      db.exec(SQLITE_MIGRATIONS[version] as string);
    db.exec(`PRAGMA user_version = ${SQLITE_MIGRATIONS.length}`);
  });
}

/** One queue per file per process: two stores on one file would deadlock (BEGIN IMMEDIATE blocks the loop). */
const queues = new Map<string, Promise<unknown>>();

/** `privateDir`: rmbg's data directory, made 0700; a file named by the user keeps its folder's mode. Files are 0600. */
export async function openSqliteDriver(
  path: string,
  { privateDir = false }: { privateDir?: boolean } = {},
): Promise<SqlDriver> {
  preparePrivateFiles(dirname(path), path, { chmodDir: privateDir });
  let db: SqliteConnection;
  try {
    db = await openSqlite(path, { busyTimeoutMs: BUSY_TIMEOUT_MS });
  } catch (error) {
    if (error instanceof RmbgError) throw error; // no SQLite driver here: its own one line says the fix
    throw new RmbgError('io_error', `cannot open ${path}: ${messageOf(error)}`, { cause: error });
  }
  try {
    db.exec('PRAGMA journal_mode = WAL');
    // FULL (the default) rather than NORMAL: a granted or refunded credit must survive a power cut.
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    migrate(db);
    makeCompanionsPrivate(path);
  } catch (error) {
    db.close();
    throw error;
  }

  const statements = new Map<string, SqliteStatement>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  const direct: SqlExecutor = {
    forUpdate: '',
    skipLocked: '',
    all: async <T>(sql: string, params: readonly SqlValue[] = []) => prepared(sql).all(...params) as T[],
    run: async (sql: string, params: readonly SqlValue[] = []) => prepared(sql).run(...params),
  };

  function inTurn<T>(work: () => Promise<T>): Promise<T> {
    const result = (queues.get(path) ?? Promise.resolve()).then(work);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    queues.set(path, settled);
    // The last one out removes the file's queue, so the map does not grow with every file ever opened.
    void settled.then(() => {
      if (queues.get(path) === settled) queues.delete(path);
    });
    return result;
  }

  return {
    engine: 'sqlite',
    location: path,
    forUpdate: '',
    skipLocked: '',
    all: (sql, params) => inTurn(() => direct.all(sql, params)),
    run: (sql, params) => inTurn(() => direct.run(sql, params)),
    transaction: (fn) =>
      inTurn(async () => {
        // IMMEDIATE takes the write lock at BEGIN, so balance reads and the rows written after them cannot interleave.
        db.exec('BEGIN IMMEDIATE');
        try {
          const result = await fn(direct);
          db.exec('COMMIT');
          return result;
        } catch (error) {
          if (db.inTransaction) db.exec('ROLLBACK');
          throw error;
        }
      }),
    schemaVersion: () => inTurn(async () => db.userVersion()),
    // The file has one server (its pid lock), so this machine's clock is the only one.
    clock: async () => Date.now(),
    close: () => inTurn(async () => db.close()),
  };
}
