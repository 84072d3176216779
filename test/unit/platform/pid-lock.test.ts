// The pid lock that keeps two batches off one output folder and two servers off one data directory.

import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { acquirePidLock } from '../../../src/platform/pid-lock.js';

const dirs: string[] = [];
const lockIn = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rmbg-lock-'));
  dirs.push(dir);
  return path.join(dir, 'x.lock');
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('acquirePidLock', () => {
  it('releasing leaves alone a lock that is no longer ours (removed by hand, then taken by another process)', () => {
    const lock = lockIn();
    const release = acquirePidLock(lock, () => 'busy');
    rmSync(lock);
    writeFileSync(lock, '424242');
    release();
    expect(readFileSync(lock, 'utf8')).toBe('424242');
  });

  it('writes our pid and where we run, and releasing removes the lock', () => {
    const lock = lockIn();
    const release = acquirePidLock(lock, () => 'busy');
    expect(readFileSync(lock, 'utf8')).toMatch(new RegExp(`^${process.pid} ${hostname()}:\\d*$`));
    expect(readdirNames(path.dirname(lock))).toEqual(['x.lock']); // no temp file left behind
    release();
    expect(existsSync(lock)).toBe(false);
  });

  it('refuses while a live process holds it, naming that process', () => {
    const lock = lockIn();
    writeFileSync(lock, String(process.ppid)); // our parent is alive
    let error: unknown;
    try {
      acquirePidLock(lock, (owner) => `held by ${owner}`);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RmbgError);
    expect((error as RmbgError).code).toBe('usage_error');
    expect((error as RmbgError).message).toBe(`held by pid ${process.ppid}`);
    expect(readFileSync(lock, 'utf8')).toBe(String(process.ppid)); // untouched
  });

  it('refuses while this process holds it (two batches of the library in one program), and takes it once released', () => {
    const lock = lockIn();
    const release = acquirePidLock(lock, (owner) => `held by ${owner}`);
    expect(() => acquirePidLock(lock, (owner) => `held by ${owner}`)).toThrow(`held by pid ${process.pid}`);
    release();
    acquirePidLock(lock, () => 'busy')();
    expect(existsSync(lock)).toBe(false);
  });

  it('refuses a lock from another machine or container while its holder renews it, and takes it over after', () => {
    const lock = lockIn();
    // Two containers on one volume are both pid 1: the pid cannot tell, the lock's renewed time can.
    writeFileSync(lock, '1 other-container:4026532999');
    expect(() => acquirePidLock(lock, (owner) => `held by ${owner}`)).toThrow(
      'held by pid 1 in other-container (another machine or container; its lock was renewed 0 s ago and is taken over once not renewed for 15 s)',
    );
    expect(readFileSync(lock, 'utf8')).toBe('1 other-container:4026532999');
    const aMinuteAgo = new Date(Date.now() - 60_000);
    utimesSync(lock, aMinuteAgo, aMinuteAgo); // its holder stopped renewing it: killed
    acquirePidLock(lock, () => 'busy')();
    expect(existsSync(lock)).toBe(false);
  });

  it("renews its lock's time while it holds it", () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const lock = lockIn();
      const release = acquirePidLock(lock, () => 'busy');
      const aMinuteAgo = new Date(Date.now() - 60_000);
      utimesSync(lock, aMinuteAgo, aMinuteAgo);
      vi.advanceTimersByTime(5_000);
      expect(Date.now() - statSync(lock).mtimeMs).toBeLessThan(10_000);
      release();
      expect(existsSync(lock)).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  /** A lock held 15 s (its renewals) after `change` was done to its file: what the lock's owner was told, once released. */
  function lostAfter(change: (lock: string) => void): { lock: string; lost: Array<string | undefined> } {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const lock = lockIn();
      const lost: Array<string | undefined> = [];
      const release = acquirePidLock(
        lock,
        () => 'busy',
        (holder) => lost.push(holder),
      );
      change(lock);
      vi.advanceTimersByTime(15_000);
      release();
      return { lock, lost };
    } finally {
      vi.useRealTimers();
    }
  }

  it('says once when another process has taken its lock over (this one stalled), and leaves that lock alone', () => {
    const { lock, lost } = lostAfter((file) => writeFileSync(file, '1 other-container:4026532999')); // as a takeover leaves it
    expect(lost).toEqual([expect.stringMatching(/^pid 1 in other-container \(another machine or container; /)]);
    expect(readFileSync(lock, 'utf8')).toBe('1 other-container:4026532999');
  });

  it('says once when its lock file was removed', () => {
    const { lost } = lostAfter((file) => rmSync(file));
    expect(lost).toEqual([undefined]);
  });

  it('takes over a lock left by a process that is gone, or an empty one', () => {
    for (const content of ['2147483646', '']) {
      const lock = lockIn();
      writeFileSync(lock, content);
      acquirePidLock(lock, () => 'busy')();
      expect(existsSync(lock)).toBe(false);
    }
  });
});

function readdirNames(dir: string): string[] {
  return readdirSync(dir);
}
