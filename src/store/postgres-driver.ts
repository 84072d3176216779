// The PostgreSQL engine: a pg pool, migrated under an advisory lock (instances starting together migrate once);
// a database that cannot serve is 503 service_unavailable with Retry-After, never a 500.

import pg from 'pg';
import { RmbgError, messageOf } from '../api/errors.js';
import { checkWholeNumber } from '../api/whole-number.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import { redactedStoreUrl } from './redact-url.js';
import type { SqlDriver, SqlExecutor, SqlValue } from './sql.js';

/** Any fixed number: the key of the advisory lock that serialises migrations across instances. */
const MIGRATION_LOCK = 0x726d6267; // "rmbg"
/** Seconds a client should wait when the database cannot be reached or is held up. */
const UNREACHABLE_RETRY_SECONDS = 2;
/**
 * How much longer than `statement_timeout` this server waits for a query's answer before it gives the connection
 * up: PostgreSQL's own cancel comes first whenever the database answers at all.
 */
export const QUERY_BOUND_MARGIN_MS = 1000;

/**
 * The postgres:// URL's connection settings and defaults (docs/deploy.md; PostgreSQL's names and units, 0 is off):
 * they keep one stuck server (stopped inside a transaction) from stalling the others.
 */
export const POSTGRES_SETTINGS = {
  statement_timeout: { default: 15_000, min: 0 },
  lock_timeout: { default: 5_000, min: 0 },
  idle_in_transaction_session_timeout: { default: 10_000, min: 0 },
  /** Seconds to open a connection, or to wait for a free one of the pool. */
  connect_timeout: { default: 5, min: 1 },
  /** Seconds of silence before TCP keepalive probes a connection (a database behind a cut network). */
  keepalives_idle: { default: 30, min: 1 },
  /** Connections of this server's pool. */
  pool_size: { default: 10, min: 1 },
  /**
   * Milliseconds a migration waits for another server's (the advisory lock) and each of its statements may run;
   * past it, opening the store fails with a message that says which.
   */
  migration_timeout: { default: 60_000, min: 0 },
} as const;

export type PostgresSettings = { -readonly [name in keyof typeof POSTGRES_SETTINGS]: number };

/**
 * Milliseconds this server waits for the answer of one query before it destroys the connection (0: no bound, as
 * `statement_timeout` 0 allows statements of any length). Without it, a query sent on a connection whose peer went
 * silent (a failover that blackholes the old primary, a proxy that stops relaying) waits for TCP to give up, ~15 min.
 */
export function queryBoundMs(settings: PostgresSettings): number {
  return settings.statement_timeout > 0 ? settings.statement_timeout + QUERY_BOUND_MARGIN_MS : 0;
}

/**
 * The URL without rmbg's settings (what pg connects to), and the settings. Split by hand, not by new URL(), so
 * libpq's forms that are no WHATWG URL (a socket folder as ?host=) pass through.
 */
export function postgresSettings(url: string): { connectionString: string; settings: PostgresSettings } {
  const question = url.indexOf('?');
  const base = question < 0 ? url : url.slice(0, question);
  const given = new Map<string, string>();
  const kept: string[] = [];
  for (const pair of question < 0 ? [] : url.slice(question + 1).split('&')) {
    const equals = pair.indexOf('=');
    const name = decoded(equals < 0 ? pair : pair.slice(0, equals));
    if (Object.hasOwn(POSTGRES_SETTINGS, name)) given.set(name, decoded(equals < 0 ? '' : pair.slice(equals + 1)));
    else if (pair) kept.push(pair);
  }
  const settings = {} as PostgresSettings;
  for (const [name, { default: fallback, min }] of Object.entries(POSTGRES_SETTINGS) as Array<
    [keyof PostgresSettings, { default: number; min: number }]
  >) {
    const text = given.get(name);
    if (text === undefined) {
      settings[name] = fallback;
      continue;
    }
    settings[name] = checkWholeNumber(`the store URL's ${name}`, text, min, 2_147_483_647, 'usage_error');
  }
  return { connectionString: kept.length ? `${base}?${kept.join('&')}` : base, settings };
}

/** A query string's name or value: + is a space, %XX an escape (left as written when malformed). */
function decoded(text: string): string {
  const spaced = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

// int8 (counts, sums cast to BIGINT, millisecond times) as numbers: every value the store keeps is far below 2^53.
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC
      ? Number
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** `?` placeholders (the store's one SQL) as PostgreSQL's $1, $2, …; the store's SQL has no `?` in literals. */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

// What node-postgres says when the connection, not the query, failed.
const UNREACHABLE_MESSAGE = new RegExp(
  [
    'Connection terminated',
    'connection timeout',
    'Client has encountered a connection error',
    'Connection ended',
    'timeout exceeded when trying to connect',
    'Query read timeout',
  ].join('|'),
  'i',
);

/** The database cannot serve us, whatever the query: connection, shutdown, resource or login SQLSTATEs; sockets. */
export function isUnreachable(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (/^(08|57P|53|28|3D|25P03$)/.test(code) || /^E[A-Z]+$/.test(code))) return true;
  return typeof message === 'string' && UNREACHABLE_MESSAGE.test(message);
}

/** A lock or statement outlived its timeout (55P03, 57014), or a deadlock ended this transaction (40P01). */
function isHeldUp(error: unknown): boolean {
  const { code } = error as { code?: unknown };
  return code === '55P03' || code === '57014' || code === '40P01';
}

function unavailable(error: unknown): RmbgError {
  const what = isHeldUp(error) ? 'the database is held up by another transaction' : 'the database is unreachable';
  return new RmbgError('service_unavailable', `${what} (${messageOf(error)}); retry shortly`, {
    retryAfterSeconds: UNREACHABLE_RETRY_SECONDS,
    cause: error,
  });
}

async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw isUnreachable(error) || isHeldUp(error) ? unavailable(error) : error;
  }
}

function executor(client: pg.Pool | pg.PoolClient): SqlExecutor {
  return {
    // NO KEY: the account's lock must not block the foreign-key checks (KEY SHARE) of its leases', keys' and
    // refunds' inserts; it still excludes every other charge, grant and refund of the account.
    forUpdate: ' FOR NO KEY UPDATE',
    skipLocked: ' FOR UPDATE SKIP LOCKED',
    all: async <T>(sql: string, params: readonly SqlValue[] = []) =>
      (await client.query(numbered(sql), params as SqlValue[])).rows as T[],
    run: async (sql: string, params: readonly SqlValue[] = []) =>
      (await client.query(numbered(sql), params as SqlValue[])).rowCount ?? 0,
  };
}

async function migrate(config: pg.ClientConfig, settings: PostgresSettings): Promise<void> {
  const bound = settings.migration_timeout;
  // A client of its own, bounded by migration_timeout rather than by the requests' statement_timeout (a backfill
  // may take longer than a request's statement may): past it plus the margin, a silent connection is given up.
  const client = new pg.Client({ ...config, query_timeout: bound > 0 ? bound + QUERY_BOUND_MARGIN_MS : undefined });
  client.on('error', () => {}); // the failing query rejects as well; see transaction()
  try {
    await client.connect();
    // The whole migration is one transaction holding a transaction-level advisory lock: a second server waits
    // for it (at most migration_timeout, then fails saying so) and then finds nothing to do. A server that stops
    // or freezes while migrating leaves its session idle inside that transaction: PostgreSQL ends it after
    // idle_in_transaction_session_timeout, which rolls the migration back and frees the lock for the others.
    await client.query(
      `SET statement_timeout = ${bound}; SET lock_timeout = ${bound}; ` +
        `SET idle_in_transaction_session_timeout = ${settings.idle_in_transaction_session_timeout}`,
    );
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]).catch((error: unknown) => {
        // lock_timeout or statement_timeout, whichever PostgreSQL checks first: both are migration_timeout.
        const code = (error as { code?: unknown }).code;
        if (code !== '55P03' && code !== '57014') throw error;
        throw new RmbgError(
          'io_error',
          `another server has held the store's migration lock for over ${bound} ms (migration_timeout): it ` +
            `is migrating the schema, or stopped or froze while migrating (PostgreSQL ends its session after ` +
            `idle_in_transaction_session_timeout); retry once it has finished, or raise migration_timeout in ` +
            `the store URL`,
          { cause: error },
        );
      });
      await client.query('CREATE TABLE IF NOT EXISTS rmbg_schema (version INTEGER NOT NULL)');
      const rows = (await client.query<{ version: number }>('SELECT version FROM rmbg_schema')).rows;
      const current = rows[0]?.version ?? 0;
      if (current > POSTGRES_MIGRATIONS.length) {
        throw new RmbgError(
          'io_error',
          `the database was written by a newer rmbg (schema ${current}; this version knows ${POSTGRES_MIGRATIONS.length})`,
        );
      }
      for (let version = current; version < POSTGRES_MIGRATIONS.length; version++) {
        await client.query(POSTGRES_MIGRATIONS[version] as string).catch((error: unknown) => {
          const code = (error as { code?: unknown }).code;
          if (code !== '55P03' && code !== '57014') throw error;
          throw new RmbgError(
            'io_error',
            `migrating the schema to version ${version + 1} took over ${bound} ms (migration_timeout: ${messageOf(error)}); ` +
              `nothing was changed; raise migration_timeout in the store URL for a large database, or stop what ` +
              `holds its tables`,
            { cause: error },
          );
        });
      }
      if (current < POSTGRES_MIGRATIONS.length) {
        await client.query('DELETE FROM rmbg_schema');
        await client.query('INSERT INTO rmbg_schema (version) VALUES ($1)', [POSTGRES_MIGRATIONS.length]);
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  } finally {
    await client.end().catch(() => {});
  }
}

export async function openPostgresDriver(url: string): Promise<SqlDriver> {
  const { connectionString, settings } = postgresSettings(url);
  const location = redactedStoreUrl(connectionString);
  const config: pg.ClientConfig = {
    connectionString,
    connectionTimeoutMillis: settings.connect_timeout * 1000,
    // A query whose answer does not come is given up, and pg-pool destroys a connection released with an error
    // (see transaction()), so a silent connection is never handed out again. Node offers no TCP_USER_TIMEOUT;
    // this bound is what finds a connection whose peer stopped answering (keepalive probes only idle ones).
    query_timeout: queryBoundMs(settings) || undefined,
    keepAlive: true,
    keepAliveInitialDelayMillis: settings.keepalives_idle * 1000,
    // pg sends these in the start-up packet of every connection. As strings: pg leaves out a number 0, and the
    // database's or role's own setting would then apply instead of off.
    statement_timeout: String(settings.statement_timeout) as unknown as number,
    lock_timeout: String(settings.lock_timeout) as unknown as number,
    idle_in_transaction_session_timeout: String(settings.idle_in_transaction_session_timeout) as unknown as number,
    types,
  };
  const pool = new pg.Pool({ ...config, max: settings.pool_size });
  // An idle client whose server went away emits 'error' on the pool; unhandled, it would end the process.
  pool.on('error', () => {});
  try {
    await migrate(config, settings);
  } catch (error) {
    await pool.end();
    if (error instanceof RmbgError) throw error;
    // pg's "Invalid URL": a user name or password with @ / : ? # or % unencoded.
    if ((error as { code?: string }).code === 'ERR_INVALID_URL')
      throw new RmbgError(
        'usage_error',
        `the store URL ${location} is not a valid URL: percent-encode @ / : ? # and % in its user name and password (encodeURIComponent)`,
      );
    throw new RmbgError('io_error', `cannot open the PostgreSQL store ${location}: ${messageOf(error)}`, {
      cause: error,
    });
  }
  const direct = executor(pool);
  return {
    engine: 'postgres',
    location,
    forUpdate: direct.forUpdate,
    skipLocked: direct.skipLocked,
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
    schemaVersion: () =>
      guarded(async () => (await direct.all<{ version: number }>('SELECT version FROM rmbg_schema'))[0]?.version ?? 0),
    clock: () =>
      guarded(
        async () =>
          (
            await direct.all<{ now: number }>(
              'SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) AS now',
            )
          )[0]!.now,
      ),
    close: () => pool.end(),
  };
}
