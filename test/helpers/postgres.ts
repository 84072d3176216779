// A database of its own for a test file, on the run's PostgreSQL (test/setup/postgres.ts): created with a
// random name, so files running in parallel never see each other's rows.

import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

/** The URL of a new, empty database. */
export async function freshDatabase(): Promise<string> {
  const admin = inject('postgresUrl');
  const name = `rmbg_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client(admin);
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Rows of one query on the database at `url` (to look at what the store wrote, from outside it). */
export async function pgRows<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}
