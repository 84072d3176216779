// Opens the store a command names: `--store URL` > RMBG_STORE_URL > the data directory's SQLite file.
// postgres:// and postgresql:// select PostgreSQL (pooled, shared by several instances); a path or a
// sqlite: URL selects a SQLite file (embedded, one server at a time).

import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RmbgError } from '../api/errors.js';
import { createStore } from './create-store.js';
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from './migrations.js';
import { openSqliteDriver } from './sqlite-driver.js';
import type { Store, StoreEngine } from './types.js';

export const STORE_FILE = 'rmbg.sqlite';
export const STORE_URL_ENV = 'RMBG_STORE_URL';

/** `dataDir`: the file is the data directory's own, so the directory is rmbg's to keep private (0700). */
export type StoreTarget = { engine: 'sqlite'; path: string; dataDir?: boolean } | { engine: 'postgres'; url: string };

/**
 * Where the store is. `url` is the --store flag (falling back to RMBG_STORE_URL); without either, the SQLite
 * file in `dataDir`. `sqlite:relative/path`, `sqlite:///absolute/path` and plain paths name a file.
 */
export function storeTarget(
  url: string | undefined,
  dataDir: string,
  env: NodeJS.ProcessEnv = process.env,
): StoreTarget {
  const given = url ?? (env[STORE_URL_ENV] || undefined);
  if (given === undefined || given === '')
    return { engine: 'sqlite', path: join(resolve(dataDir), STORE_FILE), dataDir: true };
  if (/^postgres(ql)?:\/\//i.test(given)) return { engine: 'postgres', url: given };
  if (/^sqlite:\/\//i.test(given))
    return { engine: 'sqlite', path: fileURLToPath(given.replace(/^sqlite:/i, 'file:')) };
  if (/^sqlite:/i.test(given)) return { engine: 'sqlite', path: resolve(given.slice('sqlite:'.length)) };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(given)) {
    throw new RmbgError(
      'usage_error',
      `\`store\` must be a postgres:// or postgresql:// URL, a sqlite: URL or a file path; got '${given.split('://')[0]}://…'`,
    );
  }
  return { engine: 'sqlite', path: resolve(given) };
}

export const LATEST_SCHEMA: Record<StoreEngine, number> = {
  sqlite: SQLITE_MIGRATIONS.length,
  postgres: POSTGRES_MIGRATIONS.length,
};

/** Opens (creating and migrating as needed) the store at `target`; a data directory path means its SQLite file. */
export async function openStore(target: StoreTarget | string): Promise<Store> {
  const where: StoreTarget =
    typeof target === 'string' ? { engine: 'sqlite', path: join(resolve(target), STORE_FILE), dataDir: true } : target;
  if (where.engine === 'sqlite')
    return createStore(
      await openSqliteDriver(where.path, { privateDir: where.dataDir === true }),
      LATEST_SCHEMA.sqlite,
    );
  // pg loads only when a PostgreSQL store is asked for.
  const { openPostgresDriver } = await import('./postgres-driver.js');
  return createStore(await openPostgresDriver(where.url), LATEST_SCHEMA.postgres);
}
