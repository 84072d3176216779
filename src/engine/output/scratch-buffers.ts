// The pixel jobs' scratch buffers on this thread: each pixel worker has its own (a worker has its own modules), so
// steady work takes its mask planes and compose and encode buffers from here instead of fresh memory. A job gives
// back what it took once nothing reads it; what leaves the thread (a job's result) is never from here.

import { BufferPool } from '../../platform/buffer-pool.js';

/** A 12 MP photo's finish takes about 30 MiB (its mask at full size, a band composed, the bands deflating); a
 * 25 MP one about 50. Kept for 10 s of idleness, so a server between bursts lets it go. */
export const SCRATCH = new BufferPool({ ceilingBytes: 64 << 20, idleMs: 10_000, minBytes: 128 << 10 });
