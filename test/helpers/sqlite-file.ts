// The tests' one way into a store's SQLite file from outside the store: the store's own connection module
// (node:sqlite or better-sqlite3, whichever this Node uses), so the suite runs where better-sqlite3 is not built.

import { openSqlite, type SqliteConnection, type SqliteParam } from '../../src/store/sqlite-connection.js';

/** Runs `work` on a connection of its own to the file at `path`, closed afterwards. */
export async function withSqliteFile<T>(
  path: string,
  work: (db: SqliteConnection) => T,
  { readonly = false }: { readonly?: boolean } = {},
): Promise<T> {
  const db = await openSqlite(path, { readonly });
  try {
    return work(db);
  } finally {
    db.close();
  }
}

/** The rows of one query on the file, opened read-only. */
export function sqliteRows<T = Record<string, unknown>>(
  path: string,
  sql: string,
  ...params: SqliteParam[]
): Promise<T[]> {
  return withSqliteFile(path, (db) => db.prepare(sql).all(...params) as T[], { readonly: true });
}
