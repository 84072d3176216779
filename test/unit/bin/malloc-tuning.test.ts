// bin/malloc-tuning.js: which environments already fix glibc's malloc thresholds (the user's settings win, and
// rmbg's own after its restart stop a second one), and the container image and the docs give the same ones.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';
import { MALLOC_TUNABLES, mallocThresholdsFixed } from '../../helpers/malloc-settings.js';

describe('mallocThresholdsFixed', () => {
  it.each([
    [{}, false],
    [{ GLIBC_TUNABLES: 'glibc.pthread.rseq=0' }, false],
    [{ MALLOC_ARENA_MAX: '2' }, false],
    [{ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }, false],
    [{ GLIBC_TUNABLES: MALLOC_TUNABLES }, true],
    [{ GLIBC_TUNABLES: `glibc.pthread.rseq=0:${MALLOC_TUNABLES}` }, true],
    [{ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' }, true],
    [{ GLIBC_TUNABLES: 'glibc.malloc.trim_threshold=0' }, true],
    [{ MALLOC_MMAP_THRESHOLD_: '65536' }, true],
    [{ MALLOC_TRIM_THRESHOLD_: '65536' }, true],
  ])('%j: %s', (env, fixed) => {
    expect(mallocThresholdsFixed(env)).toBe(fixed);
  });
});

describe('the container image and the docs', () => {
  it.each(['Dockerfile', 'docs/deploy.md', 'docs/library.md'])('%s: the thresholds rmbg sets', (file) => {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    const given = [...text.matchAll(/GLIBC_TUNABLES=(glibc\.malloc\.[^\s`)]+)/g)].map((match) => match[1]);
    expect(given.length).toBeGreaterThan(0);
    expect(new Set(given)).toEqual(new Set([MALLOC_TUNABLES]));
  });
});
