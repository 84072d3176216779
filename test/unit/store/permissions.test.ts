// The data directory and the SQLite files (database, -wal, -shm) are private after the store opens,
// whatever their modes were: created under a permissive umask, or left readable by an earlier run.

import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, STORE_FILE, storeTarget } from '../../../src/store/index.js';

let root: string;

function modeOf(path: string): string {
  return (statSync(path).mode & 0o777).toString(8);
}

function modes(dir: string): Record<string, string> {
  const db = join(dir, STORE_FILE);
  return { dir: modeOf(dir), db: modeOf(db), wal: modeOf(`${db}-wal`), shm: modeOf(`${db}-shm`) };
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'rmbg-perm-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('data directory permissions', () => {
  it('creates everything private even under umask 000', async () => {
    const previous = process.umask(0);
    try {
      const dir = join(root, 'fresh');
      const store = await openStore(dir);
      await store.createAccountWithKey({ plan: 'pro', credits: 1 });
      expect(modes(dir)).toEqual({ dir: '700', db: '600', wal: '600', shm: '600' });
      await store.close();
    } finally {
      process.umask(previous);
    }
  });

  it('makes an existing world-readable directory, database, -wal and -shm private again', async () => {
    const dir = join(root, 'old');
    mkdirSync(dir);
    const first = await openStore(dir);
    await first.createAccountWithKey({ plan: 'pro', credits: 1 });
    // What an older version, a copy or a restore may have left; the -wal and -shm are still there while open.
    chmodSync(dir, 0o755);
    for (const file of [STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`]) chmodSync(join(dir, file), 0o644);
    const second = await openStore(dir);
    expect(modes(dir)).toEqual({ dir: '700', db: '600', wal: '600', shm: '600' });
    await second.close();
    await first.close();
  });

  it('a file named with --store is 0600 with its -wal and -shm, and its folder (perhaps the working directory) keeps its mode', async () => {
    const folder = join(root, 'work');
    mkdirSync(folder, { mode: 0o755 });
    chmodSync(folder, 0o755);
    const store = await openStore(storeTarget(join(folder, STORE_FILE), join(root, 'unused-data-dir')));
    await store.createAccountWithKey({ plan: 'pro', credits: 1 });
    expect(modes(folder)).toEqual({ dir: '755', db: '600', wal: '600', shm: '600' });
    await store.close();
  });
});
