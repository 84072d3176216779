// The SQLite engine: one connection (sqlite-connection.ts: node:sqlite or better-sqlite3) to a file in WAL mode,
// migrated on open. Its calls are synchronous, so an asynchronous transaction would let another request's
// statements run inside it: every call takes its turn on the file's queue, and a transaction holds the queue from
// BEGIN IMMEDIATE to COMMIT. A lock held by another process (a `sqlite3` shell, a backup, `rmbg keys create`) is
// waited for between turns of the event loop, never inside a statement, which would stop the whole server.

import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RmbgError, messageOf } from '../api/errors.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
import { makeCompanionsPrivate, preparePrivateFiles } from './private-files.js';
import type { SqlDriver, SqlExecutor, SqlValue } from './sql.js';
import { isBusy, openSqlite, type SqliteConnection, type SqliteStatement } from './sqlite-connection.js';

/**
 * How long a call waits for another process's lock, counted from when it was queued: as long as a request's
 * answer may wait on the database (service/answer-bound.ts), after which the call fails 503 with Retry-After.
 */
const LOCK_WAIT_MS = 20_000;
/** The first and the longest pause between two tries for the lock: short, since most locks are held briefly. */
const FIRST_RETRY_MS = 5;
const MAX_RETRY_MS = 100;
/** Retry-After of a call that outwaited LOCK_WAIT_MS. */
const LOCKED_RETRY_AFTER_S = 2;

/**
 * `attempt`'s result, tried again after a pause (the event loop free meanwhile) while another connection holds the
 * lock, until `deadline` (performance.now()); past it, 503. The connection's busy timeout is 0, so no try blocks.
 */
async function unlocked<T>(path: string, deadline: number, attempt: () => T): Promise<T> {
  const started = performance.now();
  for (let pause = FIRST_RETRY_MS; ; pause = Math.min(pause * 2, MAX_RETRY_MS)) {
    try {
      return attempt();
    } catch (error) {
      if (!isBusy(error)) throw error;
      if (performance.now() + pause > deadline) throw locked(path, performance.now() - started, error);
    }
    await sleep(pause);
  }
}

function locked(path: string, waitedMs: number, cause: unknown): RmbgError {
  return new RmbgError(
    'service_unavailable',
    `the SQLite store ${path} stayed locked by another process (waited ${(waitedMs / 1000).toFixed(1)} s); retry shortly`,
    { retryAfterSeconds: LOCKED_RETRY_AFTER_S, cause },
  );
}

/** Runs `work` in a BEGIN IMMEDIATE transaction (the lock waited for as `unlocked` does): committed when it returns,
 * rolled back when it throws. */
async function immediately<T>(
  db: SqliteConnection,
  path: string,
  deadline: number,
  work: () => Promise<T>,
): Promise<T> {
  // IMMEDIATE takes the write lock at BEGIN, so balance reads and the rows written after them cannot interleave.
  await unlocked(path, deadline, () => db.exec('BEGIN IMMEDIATE'));
  try {
    const result = await work();
    // A COMMIT refused as busy leaves the transaction open, to be committed again.
    await unlocked(path, deadline, () => db.exec('COMMIT'));
    return result;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw isBusy(error) ? locked(path, 0, error) : error;
  }
}

async function migrate(db: SqliteConnection, path: string, deadline: number): Promise<void> {
  await immediately(db, path, deadline, async () => {
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

/** One queue per file per process: two stores on one file would wait for each other's lock without end. */
const queues = new Map<string, Promise<unknown>>();

/**
 * `privateDir`: rmbg's data directory, made 0700; a file named by the user keeps its folder's mode. Files are 0600.
 * `lockWaitMs`: how long a call waits for another process's lock (LOCK_WAIT_MS; shorter in tests).
 */
export async function openSqliteDriver(
  path: string,
  { privateDir = false, lockWaitMs = LOCK_WAIT_MS }: { privateDir?: boolean; lockWaitMs?: number } = {},
): Promise<SqlDriver> {
  preparePrivateFiles(dirname(path), path, { chmodDir: privateDir });
  let db: SqliteConnection;
  try {
    // 0: a statement that meets another's lock fails at once, and `unlocked` waits for it without blocking.
    db = await openSqlite(path, { busyTimeoutMs: 0 });
  } catch (error) {
    if (error instanceof RmbgError) throw error; // no SQLite driver here: its own one line says the fix
    throw new RmbgError('io_error', `cannot open ${path}: ${messageOf(error)}`, { cause: error });
  }
  try {
    const deadline = performance.now() + lockWaitMs;
    await unlocked(path, deadline, () => db.exec('PRAGMA journal_mode = WAL'));
    // FULL (the default) rather than NORMAL: a granted or refunded credit must survive a power cut.
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    await migrate(db, path, deadline);
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

  /** `work` in the file's turn, given the deadline of its waits for another process's lock (from now, queued). */
  function inTurn<T>(work: (deadline: number) => Promise<T>): Promise<T> {
    const deadline = performance.now() + lockWaitMs;
    const result = (queues.get(path) ?? Promise.resolve()).then(() => work(deadline));
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
    all: <T>(sql: string, params: readonly SqlValue[] = []) =>
      inTurn((deadline) => unlocked(path, deadline, () => prepared(sql).all(...params) as T[])),
    run: (sql, params = []) => inTurn((deadline) => unlocked(path, deadline, () => prepared(sql).run(...params))),
    transaction: (fn) => inTurn((deadline) => immediately(db, path, deadline, () => fn(direct))),
    schemaVersion: () => inTurn((deadline) => unlocked(path, deadline, () => db.userVersion())),
    // The file has one server (its pid lock), so this machine's clock is the only one.
    clock: async () => Date.now(),
    close: () => inTurn(async () => db.close()),
  };
}
