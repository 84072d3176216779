// The PostgreSQL engine: a pg connection pool, migrated on open under an advisory lock so that instances
// starting together apply each migration once. A lost connection (server down, restarting, unreachable)
// becomes 503 service_unavailable with Retry-After, never a 500; the pool reconnects once it is back.

import pg from 'pg';
import { RmbgError } from '../api/errors.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import type { SqlDriver, SqlExecutor, SqlValue } from './sql.js';

/** Any fixed number: the key of the advisory lock that serialises migrations across instances. */
const MIGRATION_LOCK = 0x726d6267; // "rmbg"
const POOL_SIZE = 10;
/** Seconds a client should wait when the database cannot be reached. */
const UNREACHABLE_RETRY_SECONDS = 2;
const CONNECT_TIMEOUT_MS = 5000;

// int8 (counts, sums cast to BIGINT, millisecond times) as numbers: every value the store keeps is far below 2^53.
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC ? Number : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** `?` placeholders (the store's one SQL) as PostgreSQL's $1, $2, …; the store's SQL has no `?` in literals. */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/**
 * The database cannot serve us, whatever the query: SQLSTATE classes 08 (connection exception), 57P (shutdown,
 * restart), 53 (too many connections, out of resources), 28 (login refused) and 3D (the database is gone),
 * and socket errors (ECONNREFUSED, ECONNRESET, …).
 */
function isUnreachable(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (/^(08|57P|53|28|3D)/.test(code) || /^E[A-Z]+$/.test(code))) return true;
  return typeof message === 'string' && /Connection terminated|connection timeout|Client has encountered a connection error|Connection ended/i.test(message);
}

function unreachable(error: unknown): RmbgError {
  return new RmbgError('service_unavailable', `the database is unreachable (${(error as Error).message}); retry shortly`, {
    retryAfterSeconds: UNREACHABLE_RETRY_SECONDS,
    cause: error,
  });
}

async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw isUnreachable(error) ? unreachable(error) : error;
  }
}

function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparseable URL)';
  }
}

function executor(client: pg.Pool | pg.PoolClient): SqlExecutor {
  return {
    forUpdate: ' FOR UPDATE',
    all: async <T>(sql: string, params: readonly SqlValue[] = []) => (await client.query(numbered(sql), params as SqlValue[])).rows as T[],
    run: async (sql: string, params: readonly SqlValue[] = []) => (await client.query(numbered(sql), params as SqlValue[])).rowCount ?? 0,
  };
}

async function migrate(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  client.on('error', () => {}); // the failing query rejects as well; see transaction()
  try {
    // Session-level lock: a second instance waits here until the first has migrated, then finds nothing to do.
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS rmbg_schema (version INTEGER NOT NULL)');
      const rows = (await client.query<{ version: number }>('SELECT version FROM rmbg_schema')).rows;
      const current = rows[0]?.version ?? 0;
      if (current > POSTGRES_MIGRATIONS.length) {
        throw new RmbgError('io_error', `the database was written by a newer rmbg (schema ${current}; this version knows ${POSTGRES_MIGRATIONS.length})`);
      }
      for (let version = current; version < POSTGRES_MIGRATIONS.length; version++) {
        await client.query('BEGIN');
        try {
          await client.query(POSTGRES_MIGRATIONS[version] as string);
          await client.query('DELETE FROM rmbg_schema');
          await client.query('INSERT INTO rmbg_schema (version) VALUES ($1)', [version + 1]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
  }
}

export async function openPostgresDriver(url: string): Promise<SqlDriver> {
  const location = redacted(url);
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, types });
  // An idle client whose server went away emits 'error' on the pool; unhandled, it would end the process.
  pool.on('error', () => {});
  try {
    await migrate(pool);
  } catch (error) {
    await pool.end();
    if (error instanceof RmbgError) throw error;
    throw new RmbgError('io_error', `cannot open the PostgreSQL store ${location}: ${(error as Error).message}`, { cause: error });
  }
  const direct = executor(pool);
  return {
    engine: 'postgres',
    location,
    forUpdate: direct.forUpdate,
    all: (sql, params) => guarded(() => direct.all(sql, params)),
    run: (sql, params) => guarded(() => direct.run(sql, params)),
    transaction: (fn) =>
      guarded(async () => {
        const client = await pool.connect();
        let broken = false;
        // A checked-out client whose server goes away emits 'error' (the pool listens only to idle ones);
        // unheard, it would end the process. The query in progress rejects too, and that is what we act on.
        const onError = () => (broken = true);
        client.on('error', onError);
        try {
          await client.query('BEGIN');
          const result = await fn(executor(client));
          await client.query('COMMIT');
          return result;
        } catch (error) {
          broken = isUnreachable(error);
          if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
          throw error;
        } finally {
          // A client whose connection broke is destroyed, not handed to the next request.
          client.off('error', onError);
          client.release(broken);
        }
      }),
    schemaVersion: () => guarded(async () => (await direct.all<{ version: number }>('SELECT version FROM rmbg_schema'))[0]?.version ?? 0),
    close: () => pool.end(),
  };
}
