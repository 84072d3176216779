// A lock file holding the owner's pid, for "one writer at a time" on a folder (a batch's output folder,
// a server's data directory). Created atomically with its content (temp file + link), so another process
// never sees an empty lock; a lock whose process is gone is taken over.

import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { RmbgError } from '../api/errors.js';
import { processAlive } from './process-alive.js';

/**
 * Locks this process holds now. A lock file with our own pid is ours only if it is here: otherwise it was left
 * by a killed process whose pid we got. (The library can run two batches in one process.)
 */
const heldHere = new Set<string>();

/** Takes the lock or throws usage_error with `busyMessage(ownerPid)`; returns the function that releases it. */
export function acquirePidLock(lockPath: string, busyMessage: (ownerPid: number) => string): () => void {
  const temp = `${lockPath}.${process.pid}.tmp`;
  writeFileSync(temp, String(process.pid));
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        linkSync(temp, lockPath); // fails with EEXIST if held: atomic test-and-set, content included
        heldHere.add(lockPath);
        return () => {
          heldHere.delete(lockPath);
          rmSync(lockPath, { force: true });
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const owner = Number(readFileSync(lockPath, 'utf8'));
        const ownerHolds = owner === process.pid ? heldHere.has(lockPath) : Number.isInteger(owner) && owner > 0 && processAlive(owner);
        if (ownerHolds) {
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
