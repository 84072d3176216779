// Keys off the command line: `credits add` by key id or with the key on stdin, `config set api-key` from
// stdin, and --help saying why a key on the command line is a bad idea. The real CLI over a real data dir.

import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_FILE } from '../../src/store/index.js';
import { ensureBuilt, rmbg } from '../helpers/cli.js';
import { createKey, tempDataDir } from '../helpers/serve-harness.js';
import { sqliteRows } from '../helpers/sqlite-file.js';

let dataDir: string;
let settingsDir: string;

/** The CLI with this file's settings folder, `input` on its stdin. */
function rmbgWith(args: string[], input?: string, env: Record<string, string> = {}) {
  return rmbg(args, { configDir: settingsDir, env, ...(input === undefined ? {} : { input }) });
}

async function paygOf(accountId: string): Promise<number> {
  const [row] = await sqliteRows<{ sum: number }>(
    path.join(dataDir, STORE_FILE),
    "SELECT COALESCE(SUM(amount), 0) AS sum FROM credit_ledger WHERE account_id = ? AND pool = 'payg'",
    accountId,
  );
  return row?.sum ?? Number.NaN;
}

beforeAll(() => {
  ensureBuilt();
  dataDir = tempDataDir();
  settingsDir = tempDataDir();
});

afterAll(() => {
  for (const dir of [dataDir, settingsDir]) rmSync(dir, { recursive: true, force: true });
});

describe('keys never need to be on the command line', () => {
  it('credits add takes the account by key id, or the key on stdin, or RMBG_API_KEY', async () => {
    const { key, account } = await createKey(dataDir, 1);
    const listed = await rmbgWith(['keys', 'list', '--json', '--data-dir', dataDir]);
    const [{ id }] = JSON.parse(listed.stdout) as [{ id: string }];
    expect((await rmbgWith(['credits', 'add', '2', '--key-id', id, '--data-dir', dataDir])).exitCode).toBe(0);
    expect((await rmbgWith(['credits', 'add', '3', '--key', '-', '--data-dir', dataDir], `${key}\n`)).exitCode).toBe(0);
    expect(
      (await rmbgWith(['credits', 'add', '4', '--data-dir', dataDir], undefined, { RMBG_API_KEY: key })).exitCode,
    ).toBe(0);
    expect(await paygOf(account)).toBe(1 + 2 + 3 + 4);
    const unknown = await rmbgWith(['credits', 'add', '1', '--key-id', 'no-such-id', '--data-dir', dataDir]);
    expect([unknown.exitCode, unknown.stderr]).toEqual([
      2,
      expect.stringContaining("no API key has the id 'no-such-id'"),
    ]);
    const none = await rmbgWith(['credits', 'add', '1', '--data-dir', dataDir]);
    expect([none.exitCode, none.stderr]).toEqual([2, expect.stringContaining('--key-id ID')]);
  });

  it('config set api-key without a value reads the key from stdin', async () => {
    const set = await rmbgWith(['config', 'set', 'api-key'], 'rmbg_from-stdin-123456\n');
    expect(set.exitCode).toBe(0);
    expect(JSON.parse(readFileSync(path.join(settingsDir, 'config.json'), 'utf8'))).toMatchObject({
      apiKey: 'rmbg_from-stdin-123456',
    });
  });

  it('--help warns that a key on the command line shows in ps and shell history', async () => {
    for (const command of [['remove'], ['account'], ['credits', 'add']]) {
      const help = await rmbgWith([...command, '--help']);
      expect(help.stdout.replace(/\s+/g, ' '), command.join(' ')).toMatch(/shows in `ps` and shell history/);
    }
  });
});
