// A lock file holding the owner's pid, for "one writer at a time" on a folder (a batch's output folder,
// a server's data directory). Created atomically with its content (temp file + link), so another process
// never sees an empty lock; a lock whose process is gone is taken over.

import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { RmbgError } from '../api/errors.js';

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock or throws usage_error with `busyMessage(ownerPid)`; returns the function that releases it. */
export function acquirePidLock(lockPath: string, busyMessage: (ownerPid: number) => string): () => void {
  const temp = `${lockPath}.${process.pid}.tmp`;
  writeFileSync(temp, String(process.pid));
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        linkSync(temp, lockPath); // fails with EEXIST if held: atomic test-and-set, content included
        return () => rmSync(lockPath, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const owner = Number(readFileSync(lockPath, 'utf8'));
        if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && processAlive(owner)) {
          throw new RmbgError('usage_error', busyMessage(owner));
        }
        rmSync(lockPath, { force: true }); // left by a killed process
      }
    }
    throw new RmbgError('io_error', `cannot lock ${lockPath}`);
  } finally {
    rmSync(temp, { force: true });
  }
}
