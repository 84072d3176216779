// The images in flight fit in the memory the process may take: a cgroup's limit (v2 or v1, read from real files
// laid out as the kernel does) or the free RAM, against the peak of an image as large as the API allows.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LIMITS } from '../../../../src/api/limits.js';
import { concurrencyFor } from '../../../../src/engine/runtime/device-report.js';
import { availableMemory, imagesWithinMemory, peakBytesOf } from '../../../../src/engine/runtime/memory-budget.js';

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const roots: string[] = [];

/** A cgroup mount with `files` (path → content) under it. */
function cgroupMount(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'rmbg-cgroup-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe('availableMemory', () => {
  it('is a cgroup v2 limit less the working set (page cache the kernel reclaims not counted)', () => {
    const cgroupRoot = cgroupMount({
      'memory.max': `${4 * GiB}\n`,
      'memory.current': `${1 * GiB}\n`,
      'memory.stat': `anon 600000000\ninactive_file ${256 * MiB}\nactive_file 1000\n`,
    });
    expect(availableMemory({ cgroupRoot, procSelfCgroup: '0::/\n', freeBytes: 100 * GiB })).toBe(3 * GiB + 256 * MiB);
  });

  it('is the free RAM where cgroup v2 says max (no limit), or where no cgroup file is readable', () => {
    const cgroupRoot = cgroupMount({ 'memory.max': 'max\n', 'memory.current': `${GiB}\n` });
    expect(availableMemory({ cgroupRoot, procSelfCgroup: '0::/\n', freeBytes: 5 * GiB })).toBe(5 * GiB);
    expect(availableMemory({ cgroupRoot: cgroupMount({}), procSelfCgroup: '', freeBytes: 7 * GiB })).toBe(7 * GiB);
  });

  it('takes the tightest limit of the process cgroup and those above it (a systemd slice)', () => {
    const cgroupRoot = cgroupMount({
      'app.slice/memory.max': `${2 * GiB}\n`,
      'app.slice/memory.current': `${GiB}\n`,
      'app.slice/rmbg.service/memory.max': `${8 * GiB}\n`,
      'app.slice/rmbg.service/memory.current': `${GiB}\n`,
    });
    const procSelfCgroup = '0::/app.slice/rmbg.service\n';
    expect(availableMemory({ cgroupRoot, procSelfCgroup, freeBytes: 100 * GiB })).toBe(GiB);
  });

  it("reads the mount's root inside a container, whose own cgroup path is not under its mount", () => {
    const cgroupRoot = cgroupMount({ 'memory.max': `${3 * GiB}\n`, 'memory.current': `${GiB}\n` });
    const procSelfCgroup = '0::/kubepods/burstable/pod1234/abcdef\n';
    expect(availableMemory({ cgroupRoot, procSelfCgroup, freeBytes: 100 * GiB })).toBe(2 * GiB);
  });

  it('reads cgroup v1 (memory controller), at its path or, in a container, at the root', () => {
    const atPath = cgroupMount({
      'memory/docker/abc/memory.limit_in_bytes': `${2 * GiB}\n`,
      'memory/docker/abc/memory.usage_in_bytes': `${GiB}\n`,
      'memory/docker/abc/memory.stat': `cache 5\ntotal_inactive_file ${512 * MiB}\n`,
    });
    const procSelfCgroup = '5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n';
    expect(availableMemory({ cgroupRoot: atPath, procSelfCgroup, freeBytes: 100 * GiB })).toBe(GiB + 512 * MiB);
    const atRoot = cgroupMount({
      'memory/memory.limit_in_bytes': `${GiB}\n`,
      'memory/memory.usage_in_bytes': `${256 * MiB}\n`,
    });
    expect(availableMemory({ cgroupRoot: atRoot, procSelfCgroup, freeBytes: 100 * GiB })).toBe(768 * MiB);
  });

  it('is the free RAM when it is below the cgroup limit (an unlimited v1 group says 2^63)', () => {
    const cgroupRoot = cgroupMount({
      'memory/memory.limit_in_bytes': '9223372036854771712\n',
      'memory/memory.usage_in_bytes': `${GiB}\n`,
    });
    expect(availableMemory({ cgroupRoot, procSelfCgroup: '4:memory:/\n', freeBytes: 6 * GiB })).toBe(6 * GiB);
  });
});

describe('the default concurrency within memory', () => {
  it('gives a 50 MP photo (the API limit) a peak of about 1 GiB, above the 0.47 GiB the bench measured', () => {
    const peak = peakBytesOf(LIMITS.maxPixels);
    expect(peak).toBeGreaterThan(0.9 * GiB);
    expect(peak).toBeLessThan(1.2 * GiB);
    expect(peakBytesOf(12_000_000)).toBeLessThan(peak / 3);
  });

  it('keeps the device rule where memory is plenty, and lowers it in a small container', () => {
    expect(concurrencyFor('gpu', 16, 64 * GiB)).toBe(8);
    expect(concurrencyFor('cpu', 16, 64 * GiB)).toBe(2);
    // A 4 GiB container with the model loaded (~0.3 GiB): three 50 MP photos fit, eight would be OOM-killed.
    expect(concurrencyFor('gpu', 16, 3.7 * GiB)).toBe(3);
    expect(concurrencyFor('gpu', 16, 8 * GiB)).toBe(7);
    // Never below one: a single image always runs.
    expect(concurrencyFor('cpu', 2, 1 * GiB)).toBe(1);
    expect(imagesWithinMemory(0)).toBe(1);
  });

  it('counts smaller images as more at once', () => {
    expect(imagesWithinMemory(8 * GiB, 12_000_000)).toBeGreaterThan(imagesWithinMemory(8 * GiB));
  });
});
