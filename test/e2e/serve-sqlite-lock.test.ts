// One `rmbg serve` per SQLite store, kept by the lock `serve.lock` beside the file: a second server is refused
// before it opens (and would migrate) any store there, and a server whose lock was removed or taken over stops
// serving, saying why, and exits 1, so two servers never serve one store.

import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  call,
  ensureBuilt,
  rmbg,
  startIdentityServe,
  tempDataDir,
  type ServeProcess,
} from '../helpers/serve-harness.js';

const started: ServeProcess[] = [];
beforeAll(ensureBuilt);
afterAll(async () => {
  await Promise.all(started.map((server) => server.stop()));
});

async function serve(dataDir: string): Promise<ServeProcess> {
  const server = await startIdentityServe(dataDir);
  started.push(server);
  return server;
}

/** The server's exit code, or 'still serving' if it has not exited 20 s on (its lock is checked every 5 s). */
async function exitOf(server: ServeProcess): Promise<number | undefined | 'still serving'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'still serving'>((resolve) => (timer = setTimeout(resolve, 20_000, 'still serving')));
  try {
    return await Promise.race([server.child.then((result) => result.exitCode), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

it('refuses a second server on the folder before it creates or migrates a store there', async () => {
  const dataDir = tempDataDir();
  await serve(dataDir);
  const other = join(dataDir, 'other.sqlite');
  const second = await rmbg(['serve', '--port', '0', '--data-dir', dataDir, '--store', other]);
  expect(second.exitCode).toBe(2);
  expect(second.stderr).toContain(`another rmbg serve (pid `);
  expect(existsSync(other)).toBe(false);
});

it('stops a server whose lock was removed, exit 1 saying why; the next server then serves the store', async () => {
  const dataDir = tempDataDir();
  const first = await serve(dataDir);
  rmSync(join(dataDir, 'serve.lock'));
  expect(await exitOf(first)).toBe(1);
  expect(first.stderr()).toContain(
    `rmbg: error: the lock of the SQLite store in ${dataDir} (serve.lock) was removed; this server stops serving`,
  );
  await expect(call(`${first.url}/v1.0/account`)).rejects.toThrow();
  const next = await serve(dataDir);
  expect((await call(`${next.url}/readyz`)).status).toBe(200);
});

it('stops a server whose lock another process took over, naming it', async () => {
  const dataDir = tempDataDir();
  const first = await serve(dataDir);
  // As a takeover leaves it (pid-lock.ts: a new file renamed over the lock), naming a live process: this one.
  writeFileSync(join(dataDir, 'serve.lock.new'), String(process.pid));
  renameSync(join(dataDir, 'serve.lock.new'), join(dataDir, 'serve.lock'));
  expect(await exitOf(first)).toBe(1);
  expect(first.stderr()).toContain(
    `rmbg: error: another rmbg serve (pid ${process.pid}) took over the SQLite store in ${dataDir}; this server stops serving`,
  );
});
