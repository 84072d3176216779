// The main thread's large buffers lent to the workers: sharp's pixels copied for a pixel job, and the model's input
// tensor, which a pixel job fills and the inference worker hands back once the model has read it. Each comes back
// here instead of being made again: under fixed malloc thresholds a fresh one costs a page fault per page
// (bench/RESULTS.md, "Issue #47: the pixel work's buffers reused").

import { BufferPool } from '../../platform/buffer-pool.js';

/** Smaller arrays go in a message as they are (a clone from malloc's heap costs no mapping). */
export const LEND_FROM_BYTES = 128 << 10;

/** Two 12 MP photos' pixels and a few tensors, let go after 10 s idle. */
export const LENT = new BufferPool({ ceilingBytes: 160 << 20, idleMs: 10_000, minBytes: LEND_FROM_BYTES });
