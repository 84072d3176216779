// Migrations are bounded (migration_timeout in the store URL): a server or admin command that finds another
// session holding the migration lock (a server migrating, or one frozen while migrating) waits at most that long,
// then fails saying why; one that finds the lock freed within it migrates and opens.

import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { POSTGRES_MIGRATIONS } from '../../../src/store/migrations.js';
import { openStore } from '../../../src/store/index.js';
import { freshDatabase, pgRows } from '../../helpers/postgres.js';
import { rmbg } from '../../helpers/serve-harness.js';

/** The migration lock's key (postgres-driver.ts): "rmbg". */
const MIGRATION_LOCK = 0x726d6267;

let holder: pg.Client | undefined;

afterEach(async () => {
  await holder?.end().catch(() => {});
  holder = undefined;
});

/** Another session takes the migration lock and keeps it, as a server frozen while migrating would. */
async function holdMigrationLock(url: string): Promise<pg.Client> {
  holder = new pg.Client(url);
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
  return holder;
}

const bounded = (url: string, ms: number) => `${url}?migration_timeout=${ms}`;

it('a held migration lock: opening the store fails after migration_timeout, saying so, and leaves no schema', async () => {
  const url = await freshDatabase();
  await holdMigrationLock(url);
  const started = performance.now();
  const opened = await openStore({ engine: 'postgres', url: bounded(url, 1000) }).then(
    () => undefined,
    (error: unknown) => error,
  );
  const waited = performance.now() - started;
  expect(opened).toMatchObject({ code: 'io_error', message: expect.stringMatching(/migration lock for over 1000 ms/) });
  expect(waited).toBeGreaterThanOrEqual(900);
  expect(waited).toBeLessThan(10_000);
  await holder?.end();
  holder = undefined;
  expect(await pgRows(url, "SELECT to_regclass('accounts') AS t")).toEqual([{ t: null }]);
});

it('a session frozen inside its migration (as rmbg migrates: idle_in_transaction_session_timeout set) is ended by PostgreSQL, and the waiting server opens', async () => {
  const url = await freshDatabase();
  holder = new pg.Client(url);
  holder.on('error', () => {});
  await holder.connect();
  await holder.query('SET idle_in_transaction_session_timeout = 1000');
  await holder.query('BEGIN');
  await holder.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
  // The holder now sends nothing more: a migrating server that froze.
  const started = performance.now();
  const store = await openStore({ engine: 'postgres', url: bounded(url, 20_000) });
  try {
    expect(await store.schemaVersion()).toBe(POSTGRES_MIGRATIONS.length);
    expect(performance.now() - started).toBeLessThan(10_000);
  } finally {
    await store.close();
  }
});

it('a lock freed within the bound: the waiting server migrates and opens', async () => {
  const url = await freshDatabase();
  const held = await holdMigrationLock(url);
  const opening = openStore({ engine: 'postgres', url: bounded(url, 10_000) });
  // The holder ends its transaction while the open waits (the open is awaited below, whatever the order).
  setTimeout(() => void held.query('COMMIT'), 300);
  const store = await opening;
  try {
    expect(await store.schemaVersion()).toBe(POSTGRES_MIGRATIONS.length);
  } finally {
    await store.close();
  }
});

it('admin commands are bounded the same way: rmbg keys list fails with the reason, not a hang', async () => {
  const url = await freshDatabase();
  await holdMigrationLock(url);
  const started = performance.now();
  const listed = await rmbg(['keys', 'list', '--store', bounded(url, 1000)]);
  expect(performance.now() - started).toBeLessThan(15_000);
  expect(listed.exitCode).not.toBe(0);
  expect(listed.stderr).toMatch(/migration lock for over 1000 ms/);
});
