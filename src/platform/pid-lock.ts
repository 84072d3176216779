// A lock file holding the owner's pid, for "one writer at a time" on a folder (a batch's output folder,
// a server's data directory). Created atomically with its content (temp file + link), so another process
// never sees an empty lock; a lock whose process is gone is taken over atomically: under a takeover guard
// (itself an atomic link), the lock is read again and replaced by rename only if it still names the dead
// pid, so two processes that both saw the dead pid cannot both end up holding it. Release removes the lock
// only while it is still the file this process created.

import { linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { RmbgError } from '../api/errors.js';
import { processAlive } from './process-alive.js';

/** A takeover takes microseconds; a guard older than this was left by a process that died inside one. */
const STALE_GUARD_MS = 10_000;
/** Rounds of link / takeover before giving up (each waits a little while another process holds the guard). */
const MAX_ATTEMPTS = 200;
const GUARD_WAIT_MS = 5;

/**
 * Locks this process holds now. A lock file with our own pid is ours only if it is here: otherwise it was left
 * by a killed process whose pid we got. (The library can run two batches in one process.)
 */
const heldHere = new Set<string>();

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

/** What a lock file says (a pid, or garbage left by a crash); undefined when there is no lock file. */
function contentOf(lockPath: string): string | undefined {
  try {
    return readFileSync(lockPath, 'utf8');
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return undefined;
    throw error;
  }
}

function inodeOf(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

/** A synchronous pause (acquiring is synchronous): a few milliseconds while another process holds the guard. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Replaces a lock still saying `staleContent` by `temp`, atomically with respect to other takeovers. Returns false when
 * the lock changed meanwhile (another process took it or released it): the caller tries again from the start.
 */
function takeOver(lockPath: string, temp: string, staleContent: string): boolean {
  const guard = `${lockPath}.takeover`;
  try {
    linkSync(temp, guard);
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') throw error;
    try {
      if (Date.now() - statSync(guard).mtimeMs > STALE_GUARD_MS) rmSync(guard, { force: true });
    } catch {
      // Gone already: the next round tries again.
    }
    pause(GUARD_WAIT_MS);
    return false;
  }
  try {
    if (contentOf(lockPath) !== staleContent) return false;
    renameSync(temp, lockPath);
    return true;
  } finally {
    rmSync(guard, { force: true });
  }
}

/** Takes the lock or throws usage_error with `busyMessage(ownerPid)`; returns the function that releases it. */
export function acquirePidLock(lockPath: string, busyMessage: (ownerPid: number) => string): () => void {
  const temp = `${lockPath}.${process.pid}.tmp`;
  const held = (): (() => void) => {
    heldHere.add(lockPath);
    const inode = inodeOf(lockPath);
    return () => {
      heldHere.delete(lockPath);
      // Only our own file: a lock that is no longer ours (removed by hand and taken by another) stays.
      if (inode !== undefined && inodeOf(lockPath) === inode && contentOf(lockPath) === String(process.pid))
        rmSync(lockPath, { force: true });
    };
  };
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      writeFileSync(temp, String(process.pid));
      try {
        linkSync(temp, lockPath); // fails with EEXIST if held: atomic test-and-set, content included
        return held();
      } catch (error) {
        if (errnoOf(error) !== 'EEXIST') throw error;
      }
      const content = contentOf(lockPath);
      if (content === undefined) continue; // released meanwhile
      const owner = Number(content);
      const ownerHolds =
        owner === process.pid ? heldHere.has(lockPath) : Number.isInteger(owner) && owner > 0 && processAlive(owner);
      if (ownerHolds) throw new RmbgError('usage_error', busyMessage(owner));
      if (takeOver(lockPath, temp, content)) return held(); // left by a killed process
    }
    throw new RmbgError('io_error', `cannot lock ${lockPath}: other processes kept changing it`);
  } finally {
    rmSync(temp, { force: true });
  }
}
