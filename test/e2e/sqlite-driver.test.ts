// Which SQLite driver the store runs on: node:sqlite where Node has it (22.13 and later), so an install whose npm ran
// no install scripts (npm 12) still serves; better-sqlite3 elsewhere. Where neither can run, every command that
// needs the store fails in one line that names the fix. Run on this Node and on the set-up's Node of a maintained
// line (test/setup/maintained-node.ts), so both sides of 22.13 are seen where this Node is older.

import { execFileSync } from 'node:child_process';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hasUnflaggedNodeSqlite } from '../../src/store/sqlite-connection.js';
import { cliEnv, ensureBuilt, removeTempDirs, tempDir } from '../helpers/cli.js';
import { type UnbuiltSqliteInstall, unbuiltSqliteInstall } from '../helpers/unbuilt-sqlite-install.js';

const NODES = [...new Set([process.execPath, inject('maintainedNode')])].filter(Boolean);

let install: UnbuiltSqliteInstall;
let withoutIt: UnbuiltSqliteInstall;
beforeAll(() => {
  ensureBuilt();
  install = unbuiltSqliteInstall();
  withoutIt = unbuiltSqliteInstall({ absent: true });
});
afterAll(removeTempDirs);

describe.each(NODES)('rmbg on %s, installed without better-sqlite3 built', (node) => {
  const version = execFileSync(node, ['-p', 'process.version']).toString().trim();
  const hasNodeSqlite = hasUnflaggedNodeSqlite(version.slice(1));
  const run = (args: string[], bin = install.bin) =>
    execa(node, [bin, ...args], { env: cliEnv(), extendEnv: false, reject: false, timeout: 60_000 });

  it('cannot load that better-sqlite3 (as npm 12 leaves it)', async () => {
    const load = await execa(node, ['-e', 'new (require(process.argv[1]))(":memory:")', install.betterSqlite3], {
      reject: false,
    });
    expect(load.exitCode).not.toBe(0);
    expect(load.stderr).toMatch(/Could not locate the bindings file|NODE_MODULE_VERSION/);
  });

  it.skipIf(!hasNodeSqlite)('keeps keys in the store on node:sqlite, and shows no SQLite warning', async () => {
    const dataDir = tempDir();
    const created = await run(['keys', 'create', '--data-dir', dataDir]);
    expect([created.exitCode, created.stderr]).toEqual([0, expect.stringContaining('rmbg: created key')]);
    // Node 22 warns that node:sqlite is experimental: rmbg chose it, so its users are not told.
    expect(created.stderr).not.toMatch(/ExperimentalWarning|SQLite is an experimental feature/);
    const listed = await run(['keys', 'list', '--json', '--data-dir', dataDir]);
    expect(listed.exitCode).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ prefix: created.stdout.trim().slice(0, 11) }),
    ]);
    const doctor = await run(['doctor', '--data-dir', dataDir]);
    expect(doctor.stdout).toMatch(
      new RegExp(`^SQLite: loads \\(node:sqlite ${version.replaceAll('.', '\\.')}, SQLite 3\\.\\d+\\.\\d+\\)$`, 'm'),
    );
  });

  it.skipIf(hasNodeSqlite)('fails every store command in one line that names the fix, exit 1', async () => {
    const dataDir = tempDir();
    const line =
      `rmbg: SQLite is not available: better-sqlite3 is not built for Node ${version} (run 'npm run install' in ` +
      `${install.betterSqlite3}) and this Node has no node:sqlite (Node 22.13 or later has it) (io_error)\n`;
    for (const args of [
      ['keys', 'create', '--data-dir', dataDir],
      ['keys', 'list', '--data-dir', dataDir],
      ['serve', '--port', '0', '--data-dir', dataDir],
    ]) {
      const result = await run(args);
      expect([result.exitCode, `${result.stderr}\n`], args.join(' ')).toEqual([1, line]);
    }
    // rmbg doctor says the same and exits 1, unless the store is PostgreSQL, which needs no SQLite.
    const doctor = await run(['doctor', '--data-dir', dataDir]);
    expect([doctor.exitCode, doctor.stdout]).toEqual([
      1,
      expect.stringContaining(`\nSQLite: cannot load: ${line.slice(6, -12)}\n`),
    ]);
    const onPostgres = await run(['doctor', '--data-dir', dataDir, '--store', 'postgres://rmbg@127.0.0.1:1/rmbg']);
    expect([onPostgres.exitCode, onPostgres.stdout]).toEqual([0, expect.stringContaining('\nSQLite: cannot load: ')]);
  });

  it.skipIf(hasNodeSqlite)('without better-sqlite3 installed at all, says where it is missing', async () => {
    const result = await run(['keys', 'list', '--data-dir', tempDir()], withoutIt.bin);
    expect([result.exitCode, result.stderr]).toEqual([
      1,
      `rmbg: SQLite is not available: better-sqlite3 is not installed in ${withoutIt.root} and this Node has no ` +
        'node:sqlite (Node 22.13 or later has it) (io_error)',
    ]);
  });
});
