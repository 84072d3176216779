// How many images fit at once in the memory this process may still take: the tightest of its cgroup's limits
// (v2 or v1, the container's or a systemd slice's) and the free RAM, against an image's peak from its pixel count.

import { readFileSync } from 'node:fs';
import { freemem } from 'node:os';
import { join } from 'node:path';
import { LIMITS } from '../../api/limits.js';

/** Where the memory figures are read: the real files by default; a test gives a folder of its own. */
export interface MemorySources {
  /** The cgroup file system's mount point (`/sys/fs/cgroup`). */
  cgroupRoot?: string;
  /** `/proc/self/cgroup`'s text: which cgroup this process is in. */
  procSelfCgroup?: string;
  /** Bytes of RAM the kernel can still give (MemAvailable). */
  freeBytes?: number;
}

/** Peak host memory of one image through the pipeline, beyond the loaded model and its arena: per pixel of the
 * input (the most measured, 2 to 50 MP at `full`, bench/RESULTS.md "Issue #26"), plus a fixed part (the model's
 * input and mask tensors). */
const PEAK_BYTES_PER_PIXEL = 20;
const PEAK_BYTES_FIXED = 64 << 20;
/** Kept free besides the images: the CPU provider's arena, which grows by ~450 MiB at its first run (measured
 * with the images' peaks), the JS heap and the allocator's slack. */
const HEADROOM_BYTES = 512 << 20;

/** The most host memory one image of `pixels` pixels takes at its peak (decode, mask, compose, encode). */
export function peakBytesOf(pixels: number): number {
  return PEAK_BYTES_FIXED + Math.ceil(pixels * PEAK_BYTES_PER_PIXEL);
}

/** How many images of `pixels` pixels fit in `availableBytes` at once: at least 1 (one image always runs). */
export function imagesWithinMemory(availableBytes: number, pixels: number = LIMITS.maxPixels): number {
  return Math.max(1, Math.floor((availableBytes - HEADROOM_BYTES) / peakBytesOf(pixels)));
}

/** Bytes this process may still take: the free RAM, or less where a cgroup (v2 or v1) limits its memory. */
export function availableMemory(sources: MemorySources = {}): number {
  const root = sources.cgroupRoot ?? '/sys/fs/cgroup';
  const membership = sources.procSelfCgroup ?? readText('/proc/self/cgroup') ?? '';
  const free = sources.freeBytes ?? freemem();
  return Math.min(free, ...cgroupV2Room(root, membership), ...cgroupV1Room(root, membership));
}

/** cgroup v2 (`0::/path`): memory.max − the working set, at the process's cgroup and each one above it. Inside a
 * container the path may not exist under the mount (its root is the container's own cgroup): the mount's root is
 * read then. */
function cgroupV2Room(root: string, membership: string): number[] {
  const path = /^0::(\/.*)$/m.exec(membership)?.[1];
  if (path === undefined) return [];
  return ancestors(path).flatMap((dir) => {
    const limit = readBytes(join(root, dir, 'memory.max'));
    const used = readBytes(join(root, dir, 'memory.current'));
    if (limit === undefined || used === undefined) return [];
    return [limit - workingSet(used, join(root, dir, 'memory.stat'), 'inactive_file')];
  });
}

/** cgroup v1 (`N:memory:/path`): memory.limit_in_bytes − the working set, at the process's cgroup or the
 * controller's root (inside a container), whichever exists first; v1 limits already include the parents'. */
function cgroupV1Room(root: string, membership: string): number[] {
  const path = /^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(\/.*)$/m.exec(membership)?.[1];
  if (path === undefined) return [];
  for (const dir of [join(root, 'memory', path), join(root, 'memory')]) {
    const limit = readBytes(join(dir, 'memory.limit_in_bytes'));
    const used = readBytes(join(dir, 'memory.usage_in_bytes'));
    if (limit !== undefined && used !== undefined)
      return [limit - workingSet(used, join(dir, 'memory.stat'), 'total_inactive_file')];
  }
  return [];
}

/** Usage less the page cache the kernel reclaims before it kills (what kubelet calls the working set). */
function workingSet(used: number, statFile: string, inactiveKey: string): number {
  const inactive = new RegExp(`^${inactiveKey} (\\d+)$`, 'm').exec(readText(statFile) ?? '')?.[1];
  return Math.max(0, used - Number(inactive ?? 0));
}

/** `/a/b` → [`/a/b`, `/a`, `/`]: every cgroup whose limit applies. */
function ancestors(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return parts.map((_, i) => `/${parts.slice(0, parts.length - i).join('/')}`).concat('/');
}

/** A number of bytes from a cgroup file; `max` (v2's "no limit") and a missing file are undefined. */
function readBytes(file: string): number | undefined {
  const text = readText(file)?.trim();
  return text && /^\d+$/.test(text) ? Number(text) : undefined;
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
