// A lock file holding the owner's pid, for "one writer at a time" on a folder (a batch's output folder,
// a server's data directory). Created atomically with its content (temp file + link), so another process
// never sees an empty lock; a lock whose process is gone is taken over atomically: under a takeover guard
// (itself an atomic link), the lock is read again and replaced by rename only if it still names the dead
// pid, so two processes that both saw the dead pid cannot both end up holding it. Release removes the lock
// only while it is still the file this process created.
// A pid names a process only on its own machine and in its own pid namespace: two containers on one volume are both
// pid 1. So the lock also says where its holder runs, and a holder renews the lock's time while it runs; a lock from
// elsewhere is held while it is renewed, and stale once it is not (a killed container, a restarted one).

import { hostname } from 'node:os';
import { linkSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { RmbgError } from '../api/errors.js';
import { processAlive } from './process-alive.js';

/** A takeover takes microseconds; a guard older than this was left by a process that died inside one. */
const STALE_GUARD_MS = 10_000;
/** Rounds of link / takeover before giving up (each waits a little while another process holds the guard). */
const MAX_ATTEMPTS = 200;
const GUARD_WAIT_MS = 5;
/** How often a holder renews its lock's time, and how old a lock from another machine or container is left. */
const RENEW_MS = 5_000;
const STALE_ELSEWHERE_MS = 15_000;

/** This process's machine and pid namespace (a container has its own), e.g. "host-1:4026531836". */
const HERE = `${hostname()}:${pidNamespace()}`;

function pidNamespace(): string {
  try {
    return readlinkSync('/proc/self/ns/pid').replace(/\D/g, '');
  } catch {
    return ''; // not Linux: the host name alone
  }
}

/** A lock's content: "pid where"; a lock written before `where` was added holds the pid alone (this machine). */
function holderOf(content: string): { pid: number; where: string } {
  const [pid = '', where = HERE] = content.split(' ');
  return { pid: Number(pid), where };
}

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
function takeOver(lockPath: string, temp: string, staleContent: string, stillStale: () => boolean): boolean {
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
    // Checked again under the guard: a holder elsewhere may have renewed the lock since it was found stale.
    if (contentOf(lockPath) !== staleContent || !stillStale()) return false;
    renameSync(temp, lockPath);
    return true;
  } finally {
    rmSync(guard, { force: true });
  }
}

/** How long ago the lock's holder renewed it; undefined when the lock is gone. */
function renewedAgoMs(lockPath: string): number | undefined {
  const renewed = statSync(lockPath, { throwIfNoEntry: false })?.mtimeMs;
  return renewed === undefined ? undefined : Math.max(0, Date.now() - renewed);
}

/** Whether the holder a lock names runs: here, by its pid; elsewhere, by whether it renewed the lock lately. */
function holderRuns(lockPath: string, content: string): boolean {
  const { pid, where } = holderOf(content);
  if (!(Number.isInteger(pid) && pid > 0)) return false;
  if (where !== HERE) return (renewedAgoMs(lockPath) ?? Number.POSITIVE_INFINITY) < STALE_ELSEWHERE_MS;
  return pid === process.pid ? heldHere.has(lockPath) : processAlive(pid);
}

/** "pid 1234", or for a holder elsewhere "pid 1 in host-2 (another machine or container, …)". */
function describeHolder(lockPath: string, content: string): string {
  const { pid, where } = holderOf(content);
  if (where === HERE) return `pid ${pid}`;
  const ago = Math.round((renewedAgoMs(lockPath) ?? 0) / 1000);
  return (
    `pid ${pid} in ${where.split(':')[0]} (another machine or container; its lock was renewed ${ago} s ago and ` +
    `is taken over once not renewed for ${STALE_ELSEWHERE_MS / 1000} s)`
  );
}

/** Takes the lock or throws usage_error with `busyMessage(holder)` (describeHolder); returns the function that
 * releases it. While held, the lock's time is renewed (RENEW_MS); `onLost` hears once if another process has
 * taken it meanwhile (this one stalled past STALE_ELSEWHERE_MS: paused, or its clock far off), with its holder,
 * or if the lock file was removed (by hand: nothing then keeps a second process out), with undefined. */
export function acquirePidLock(
  lockPath: string,
  busyMessage: (holder: string) => string,
  onLost: (holder: string | undefined) => void = () => undefined,
): () => void {
  const temp = `${lockPath}.${process.pid}.tmp`;
  const ours = `${process.pid} ${HERE}`;
  const held = (): (() => void) => {
    heldHere.add(lockPath);
    const inode = inodeOf(lockPath);
    const isOurs = () => inode !== undefined && inodeOf(lockPath) === inode && contentOf(lockPath) === ours;
    const renew = setInterval(() => {
      try {
        if (isOurs()) return utimesSync(lockPath, new Date(), new Date());
        const content = contentOf(lockPath);
        clearInterval(renew);
        onLost(content === undefined ? undefined : describeHolder(lockPath, content));
      } catch {} // a folder gone or read-only: the next beat tries again
    }, RENEW_MS);
    renew.unref();
    return () => {
      clearInterval(renew);
      heldHere.delete(lockPath);
      // Only our own file: a lock that is no longer ours (removed by hand and taken by another) stays.
      if (isOurs()) rmSync(lockPath, { force: true });
    };
  };
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      writeFileSync(temp, ours);
      try {
        linkSync(temp, lockPath); // fails with EEXIST if held: atomic test-and-set, content included
        return held();
      } catch (error) {
        if (errnoOf(error) !== 'EEXIST') throw error;
      }
      const content = contentOf(lockPath);
      if (content === undefined) continue; // released meanwhile
      if (holderRuns(lockPath, content))
        throw new RmbgError('usage_error', busyMessage(describeHolder(lockPath, content)));
      if (takeOver(lockPath, temp, content, () => !holderRuns(lockPath, content))) return held(); // left by a killed process
    }
    throw new RmbgError('io_error', `cannot lock ${lockPath}: other processes kept changing it`);
  } finally {
    rmSync(temp, { force: true });
  }
}
