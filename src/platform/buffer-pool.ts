// Large buffers kept for reuse on one thread. Where glibc's malloc runs with fixed thresholds (bin/malloc-tuning.js),
// each fresh large buffer is a mapping of its own whose every page faults on first touch; a buffer taken again from
// the pool has its pages already (bench/RESULTS.md, "Issue #47: the pixel work's buffers reused").

/** How much a pool keeps, and for how long. */
export interface BufferPoolLimits {
  /** Bytes of free buffers kept at most (the smallest go first); a buffer larger than this is never kept. */
  ceilingBytes: number;
  /** Everything kept is let go after this long without a take or a give. */
  idleMs: number;
  /** Smaller buffers are not pooled: malloc serves them from its heap, without a mapping of their own. */
  minBytes: number;
}

/** A taken buffer serves a request down to half its size: a band's scratch never holds a photo-sized buffer. */
const MOST_WASTE = 2;

/** Rounded up to a multiple of an eighth of its power of two (at most 12.5 % more), so near sizes share buffers. */
function roundedSize(bytes: number): number {
  const step = Math.max(1, 2 ** Math.ceil(Math.log2(bytes)) / 8);
  return Math.ceil(bytes / step) * step;
}

/** Free large buffers, each taken by one user at a time and given back when done with it. */
export class BufferPool {
  /** Free buffers, smallest first. */
  private readonly free: ArrayBuffer[] = [];
  private freeBytes = 0;
  private lastUse = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Buffers made because none was free, since the pool was made (a test's and a bench's count). */
  allocations = 0;

  constructor(private readonly limits: BufferPoolLimits) {}

  /** `length` bytes over a free buffer, or a new one (its contents are whatever was there: write before reading). */
  bytes(length: number): Uint8Array {
    return new Uint8Array(this.take(length), 0, length);
  }

  /** `length` floats, as bytes(). */
  floats(length: number): Float32Array {
    return new Float32Array(this.take(length * 4), 0, length);
  }

  /** The buffer under `view` (or the buffer) is free again: the caller holds no view of it any more. */
  give(done: ArrayBuffer | ArrayBufferView): void {
    const buffer = ArrayBuffer.isView(done) ? done.buffer : done;
    if (!(buffer instanceof ArrayBuffer) || buffer.byteLength < this.limits.minBytes) return; // a moved (detached) one has 0 bytes
    if (buffer.byteLength > this.limits.ceilingBytes || this.free.includes(buffer)) return;
    while (this.freeBytes + buffer.byteLength > this.limits.ceilingBytes) this.drop(0);
    const at = this.free.findIndex((b) => b.byteLength >= buffer.byteLength);
    this.free.splice(at === -1 ? this.free.length : at, 0, buffer);
    this.freeBytes += buffer.byteLength;
    this.touch();
  }

  /** Bytes kept free now. */
  get keptBytes(): number {
    return this.freeBytes;
  }

  private take(bytes: number): ArrayBuffer {
    this.touch();
    if (bytes < this.limits.minBytes) return new ArrayBuffer(bytes);
    const at = this.free.findIndex((b) => b.byteLength >= bytes);
    if (at !== -1 && (this.free[at] as ArrayBuffer).byteLength <= bytes * MOST_WASTE) {
      const [buffer] = this.free.splice(at, 1) as [ArrayBuffer];
      this.freeBytes -= buffer.byteLength;
      return buffer;
    }
    this.allocations++;
    return new ArrayBuffer(roundedSize(bytes));
  }

  private drop(at: number): void {
    const [buffer] = this.free.splice(at, 1) as [ArrayBuffer];
    this.freeBytes -= buffer.byteLength;
  }

  /** Marks a use; the idle check lets everything go once a whole idleMs passes without one. */
  private touch(): void {
    this.lastUse = performance.now();
    if (this.idleTimer) return;
    const check = () => {
      const idle = performance.now() - this.lastUse;
      if (idle < this.limits.idleMs) {
        this.idleTimer = setTimeout(check, this.limits.idleMs - idle).unref();
        return;
      }
      this.idleTimer = undefined;
      this.free.length = 0;
      this.freeBytes = 0;
    };
    this.idleTimer = setTimeout(check, this.limits.idleMs).unref();
  }
}
