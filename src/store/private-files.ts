// The data directory and the SQLite files are made private (0700 / 0600) every time the store opens, not
// only when they are created: they hold key hashes, balances and replay payloads, which are customers'
// images. A directory or file made readable by an older version, a copy or a restore is fixed here.

import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { RmbgError, messageOf } from '../api/errors.js';

const PRIVATE_DIR = 0o700;
const PRIVATE_FILE = 0o600;
/** SQLite's companions of the database file in WAL mode; it creates them with the database's mode. */
export const SQLITE_COMPANIONS = ['-wal', '-shm'] as const;

function chmodOrRefuse(path: string, mode: number): void {
  try {
    chmodSync(path, mode);
  } catch (error) {
    // Not ours to change (another owner, a read-only mount): refusing beats serving from files others may read.
    throw new RmbgError(
      'io_error',
      `cannot make ${path} private (mode ${mode.toString(8)}): ${messageOf(error)}; fix its owner or permissions`,
      { cause: error },
    );
  }
}

/**
 * Before SQLite opens the database: the directory created 0700 (and made 0700 when `chmodDir`), the
 * database file created (or fixed) 0600.
 */
export function preparePrivateFiles(dir: string, databasePath: string, { chmodDir }: { chmodDir: boolean }): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
  if (chmodDir) chmodOrRefuse(dir, PRIVATE_DIR);
  // Created here with 0600 rather than by SQLite with 0644 minus umask; SQLite then gives -wal and -shm the same mode.
  if (!existsSync(databasePath)) closeSync(openSync(databasePath, 'a', PRIVATE_FILE));
  chmodOrRefuse(databasePath, PRIVATE_FILE);
}

/** After opening: -wal and -shm left readable by an earlier run are fixed too. */
export function makeCompanionsPrivate(databasePath: string): void {
  for (const suffix of SQLITE_COMPANIONS) {
    const path = `${databasePath}${suffix}`;
    if (existsSync(path)) chmodOrRefuse(path, PRIVATE_FILE);
  }
}
