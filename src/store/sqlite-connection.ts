// The one way rmbg opens a SQLite file: Node's own node:sqlite where this Node has it unflagged (22.13, 23.4 and
// later: nothing to build, so an install whose npm ran no install scripts works), better-sqlite3 elsewhere (Node 20,
// 22.0–22.12), imported only then. One small interface over both, whose rows, parameters and results are the same
// whichever driver runs; where neither loads, opening fails with one line that names the fix.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { RmbgError, messageOf } from '../api/errors.js';

export type SqliteDriverName = 'node:sqlite' | 'better-sqlite3';
export type SqliteParam = string | number | bigint | null | Uint8Array;
/** A row as a plain object; BLOBs as Buffers (node:sqlite gives Uint8Arrays, better-sqlite3 Buffers). */
export type SqliteRow = Record<string, unknown>;

export interface SqliteStatement {
  all(...params: SqliteParam[]): SqliteRow[];
  get(...params: SqliteParam[]): SqliteRow | undefined;
  /** Runs the statement; returns the number of rows it changed. */
  run(...params: SqliteParam[]): number;
}

export interface SqliteConnection {
  readonly driver: SqliteDriverName;
  /** Runs one or more statements (a migration), without parameters. */
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  userVersion(): number;
  /** Whether a transaction is open (SQLite ends some failed ones itself: a full disk, an I/O error). */
  readonly inTransaction: boolean;
  readonly isOpen: boolean;
  /** Closes the connection; again is a no-op. */
  close(): void;
}

export interface OpenOptions {
  readonly?: boolean;
  /**
   * How long a statement waits for another connection's lock, blocking its thread: better-sqlite3's default
   * (node:sqlite's is 0). 0: it fails at once with SQLITE_BUSY (isBusy), and the caller decides how to wait.
   */
  busyTimeoutMs?: number;
}

/** SQLITE_BUSY (another connection holds the lock), as node:sqlite (errcode) or better-sqlite3 (code) says it. */
export function isBusy(error: unknown): boolean {
  const { errcode, code } = (error ?? {}) as { errcode?: unknown; code?: unknown };
  // The primary result code is the low byte: SQLITE_BUSY_RECOVERY, _SNAPSHOT and _TIMEOUT are busy too.
  if (typeof errcode === 'number') return (errcode & 0xff) === 5;
  if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) return true;
  // A node:sqlite that gives no errcode: SQLite's own text for SQLITE_BUSY.
  return code === 'ERR_SQLITE_ERROR' && messageOf(error).startsWith('database is locked');
}

/** Which driver this Node uses, with its version and SQLite's; or why neither loads (for `rmbg doctor`). */
export type SqliteSupport =
  | { available: true; driver: SqliteDriverName; driverVersion: string; sqliteVersion: string }
  | { available: false; reason: string };

// --- node:sqlite, as much of it as rmbg uses (@types/node 20 does not declare it) ---

interface NodeStatement {
  all(...params: unknown[]): Record<string, unknown>[];
  get(...params: unknown[]): Record<string, unknown> | undefined;
  run(...params: unknown[]): { changes: number | bigint };
}
interface NodeDatabase {
  exec(sql: string): void;
  prepare(sql: string): NodeStatement;
  close(): void;
  /** Node 22.16, 24.0 and later. */
  readonly isTransaction?: boolean;
}
interface NodeSqlite {
  DatabaseSync: new (
    path: string,
    options: { readOnly: boolean; enableForeignKeyConstraints: boolean },
  ) => NodeDatabase;
}

type Driver =
  | { name: 'node:sqlite'; module: NodeSqlite; version: string }
  | { name: 'better-sqlite3'; Database: typeof BetterSqlite3; version: string };

const require = createRequire(import.meta.url);

/** node:sqlite without --experimental-sqlite: Node 22.13+, 23.4+ and every later line. */
export function hasUnflaggedNodeSqlite(nodeVersion: string = process.versions.node): boolean {
  const [major = 0, minor = 0] = nodeVersion.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 4) || (major === 22 && minor >= 13);
}

/**
 * Runs `load` without Node 22's "SQLite is an experimental feature" warning, which rmbg's users cannot act on;
 * every other warning still shows. Node emits it once, through process.emitWarning, while node:sqlite loads.
 */
export function withoutSqliteWarning<T>(load: () => T): T {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    const name = typeof warning === 'string' ? type : warning.name;
    const message = typeof warning === 'string' ? warning : warning.message;
    if (name === 'ExperimentalWarning' && message.startsWith('SQLite is an experimental feature')) return;
    return Reflect.apply(emitWarning, process, [warning, ...rest]);
  } as typeof process.emitWarning;
  try {
    return load();
  } finally {
    process.emitWarning = emitWarning;
  }
}

/** The folder `npm run install` builds better-sqlite3 in (where its package is installed). */
function betterSqlite3Folder(): string | undefined {
  try {
    return dirname(require.resolve('better-sqlite3/package.json'));
  } catch {
    return undefined;
  }
}

const firstLine = (error: unknown) => String((error as Error)?.message ?? error).split('\n')[0];

/**
 * better-sqlite3 with its native addon, or why it cannot run here (its addon loads at the first open). Imported, not
 * required: the module loader's hooks see an import, so a test can tell that `rmbg --help` never loads it.
 */
async function loadBetterSqlite3(): Promise<Driver | string> {
  let Database: typeof BetterSqlite3;
  try {
    Database = (await import('better-sqlite3')).default;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && betterSqlite3Folder() === undefined)
      // rmbg's own folder (this file is in dist/store/): where its optional dependency is missing.
      return `better-sqlite3 is not installed in ${resolve(dirname(fileURLToPath(import.meta.url)), '../..')}`;
    return `better-sqlite3 cannot load (${firstLine(error)})`;
  }
  try {
    new Database(':memory:').close();
  } catch (error) {
    const folder = betterSqlite3Folder();
    // Its install script did not run (npm 12 runs none unless allowed), or it was built for another Node.
    // `npm rebuild` runs no dependency's script under npm 12 either; the package's own script does, with any npm.
    if (folder && /Could not locate the bindings file|NODE_MODULE_VERSION/.test(messageOf(error)))
      return `better-sqlite3 is not built for Node ${process.version} (run 'npm run install' in ${folder})`;
    return `better-sqlite3 cannot open a database (${firstLine(error)})`;
  }
  const version = (
    JSON.parse(readFileSync(join(betterSqlite3Folder() ?? '', 'package.json'), 'utf8')) as { version: string }
  ).version;
  return { name: 'better-sqlite3', Database, version };
}

let chosen: Promise<Driver | string> | undefined;

/** The driver this process uses, chosen once: node:sqlite where unflagged, else better-sqlite3; or why neither. */
function driver(): Promise<Driver | string> {
  chosen ??= hasUnflaggedNodeSqlite()
    ? Promise.resolve({
        name: 'node:sqlite',
        module: withoutSqliteWarning(() => require('node:sqlite') as NodeSqlite),
        version: process.version,
      })
    : loadBetterSqlite3().then((better) =>
        typeof better === 'string' ? `${better} and this Node has no node:sqlite (Node 22.13 or later has it)` : better,
      );
  return chosen;
}

/** Opens (creating when not readonly) the SQLite file at `path`. Rejects with io_error where no driver can run. */
export async function openSqlite(
  path: string,
  { readonly = false, busyTimeoutMs = 5000 }: OpenOptions = {},
): Promise<SqliteConnection> {
  const loaded = await driver();
  if (typeof loaded === 'string') throw new RmbgError('io_error', `SQLite is not available: ${loaded}`);
  return loaded.name === 'node:sqlite'
    ? nodeSqliteConnection(loaded.module, path, readonly, busyTimeoutMs)
    : betterSqlite3Connection(loaded.Database, path, readonly, busyTimeoutMs);
}

/** Which driver loads here and its versions, or the one-line reason none does. */
export async function sqliteSupport(): Promise<SqliteSupport> {
  const loaded = await driver();
  if (typeof loaded === 'string') return { available: false, reason: `SQLite is not available: ${loaded}` };
  const db = await openSqlite(':memory:');
  try {
    const sqliteVersion = String(db.prepare('SELECT sqlite_version() AS v').get()?.v);
    return { available: true, driver: loaded.name, driverVersion: loaded.version, sqliteVersion };
  } finally {
    db.close();
  }
}

function nodeSqliteConnection(
  sqlite: NodeSqlite,
  path: string,
  readonly: boolean,
  busyTimeoutMs: number,
): SqliteConnection {
  // Foreign keys off, as SQLite (and better-sqlite3) open by default: the store turns them on itself.
  const db = new sqlite.DatabaseSync(path, { readOnly: readonly, enableForeignKeyConstraints: false });
  let open = true;
  try {
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
  } catch (error) {
    db.close();
    throw error;
  }
  // better-sqlite3 binds undefined as NULL; node:sqlite before Node 26 refuses it.
  const bind = (params: SqliteParam[]) => params.map((param) => (param === undefined ? null : param));
  return {
    driver: 'node:sqlite',
    exec: (sql) => db.exec(sql),
    prepare: (sql) => {
      const statement = db.prepare(sql);
      return {
        all: (...params) => statement.all(...bind(params)).map(plainRow),
        get: (...params) => {
          const row = statement.get(...bind(params));
          return row === undefined ? undefined : plainRow(row);
        },
        run: (...params) => Number(statement.run(...bind(params)).changes),
      };
    },
    userVersion: () => Number(db.prepare('PRAGMA user_version').get()?.user_version),
    get inTransaction() {
      return db.isTransaction ?? transactionOpen(db);
    },
    get isOpen() {
      return open;
    },
    close: () => {
      if (open) db.close();
      open = false;
    },
  };
}

/** node:sqlite's rows have no prototype and BLOBs as Uint8Array: made the plain objects with Buffers better-sqlite3 gives. */
function plainRow(row: Record<string, unknown>): SqliteRow {
  const plain: SqliteRow = {};
  for (const column in row) {
    const value = row[column];
    plain[column] =
      value instanceof Uint8Array && !Buffer.isBuffer(value)
        ? Buffer.from(value.buffer, value.byteOffset, value.byteLength)
        : value;
  }
  return plain;
}

/**
 * Whether a transaction is open, where node:sqlite cannot say (before Node 22.16): BEGIN fails inside one. A DEFERRED
 * BEGIN takes no lock, so where none was open this starts and ends an empty one.
 */
export function transactionOpen(db: Pick<NodeDatabase, 'exec'>): boolean {
  try {
    db.exec('BEGIN DEFERRED');
  } catch (error) {
    if (/within a transaction/.test(messageOf(error))) return true;
    throw error;
  }
  db.exec('ROLLBACK');
  return false;
}

function betterSqlite3Connection(
  Database: typeof BetterSqlite3,
  path: string,
  readonly: boolean,
  busyTimeoutMs: number,
): SqliteConnection {
  const db = new Database(path, { readonly, timeout: busyTimeoutMs });
  return {
    driver: 'better-sqlite3',
    exec: (sql) => void db.exec(sql),
    prepare: (sql) => {
      const statement = db.prepare(sql);
      return {
        all: (...params) => statement.all(...params) as SqliteRow[],
        get: (...params) => statement.get(...params) as SqliteRow | undefined,
        run: (...params) => statement.run(...params).changes,
      };
    },
    userVersion: () => db.pragma('user_version', { simple: true }) as number,
    get inTransaction() {
      return db.inTransaction;
    },
    get isOpen() {
      return db.open;
    },
    close: () => {
      if (db.open) db.close();
    },
  };
}
