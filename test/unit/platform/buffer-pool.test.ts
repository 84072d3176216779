// The pixel workers' buffer pool (src/platform/buffer-pool.ts): a buffer given back serves the next take of a near
// size, without a new allocation; it keeps at most its ceiling, never a buffer far larger than asked for, and lets
// everything go once idle.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { BufferPool } from '../../../src/platform/buffer-pool.js';

const MiB = 1 << 20;
const limits = { ceilingBytes: 8 * MiB, idleMs: 1000, minBytes: 64 * 1024 };

afterEach(() => vi.useRealTimers());

describe('BufferPool', () => {
  it('serves a take from a buffer given back, for the same or a slightly smaller size', () => {
    const pool = new BufferPool(limits);
    const first = pool.bytes(3 * MiB);
    pool.give(first);
    const again = pool.bytes(3 * MiB - 1000);
    expect(again.buffer).toBe(first.buffer);
    expect(again.length).toBe(3 * MiB - 1000);
    expect(pool.allocations).toBe(1);
  });

  it('makes a new buffer rather than lend one more than twice the size asked for', () => {
    const pool = new BufferPool(limits);
    const large = pool.bytes(4 * MiB);
    pool.give(large);
    expect(pool.bytes(MiB).buffer).not.toBe(large.buffer);
    expect(pool.allocations).toBe(2);
  });

  it('keeps at most its ceiling, letting the smallest go first, and never a buffer above it', () => {
    const pool = new BufferPool(limits);
    const sizes = [MiB, 2 * MiB, 3 * MiB, 4 * MiB];
    const taken = sizes.map((size) => pool.bytes(size));
    for (const bytes of taken) pool.give(bytes);
    expect(pool.keptBytes).toBeLessThanOrEqual(limits.ceilingBytes);
    expect(pool.bytes(4 * MiB).buffer).toBe(taken[3]?.buffer);
    pool.give(pool.bytes(9 * MiB));
    expect(pool.keptBytes).toBeLessThanOrEqual(limits.ceilingBytes);
  });

  it('does not pool small buffers, nor one already moved to another thread', () => {
    const pool = new BufferPool(limits);
    pool.give(new Uint8Array(1024));
    const moved = pool.bytes(MiB);
    structuredClone(moved.buffer, { transfer: [moved.buffer] });
    pool.give(moved);
    expect(pool.keptBytes).toBe(0);
  });

  it('lets everything go once idle for idleMs, and not before', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'performance'] });
    const pool = new BufferPool(limits);
    pool.give(pool.bytes(MiB));
    vi.advanceTimersByTime(limits.idleMs - 1);
    expect(pool.keptBytes).toBeGreaterThan(0);
    vi.advanceTimersByTime(1);
    expect(pool.keptBytes).toBe(0);
  });
});
