// A long run's memory levels off (issue #40): `rmbg serve` under 300 requests of mixed photos, sizes and formats,
// truncated files among them, `rmbg remove` over a folder of 180 photos, and the library's removeBackground() 180
// times in a program started as docs/library.md says, with the warm-key model (the pixels around the model are what
// allocate; the real model's memory is the same from the first photo on). Without fixed malloc thresholds glibc kept
// each thread's image-sized buffers: RSS rose by about 1 MB a photo.
//
// rmbg fixes them by starting itself again (process.execve), which Node 20 cannot: there `rmbg serve` runs in a
// child process started with them (issue #46), so the serve soak runs on this Node and on the set-up's Node of a
// maintained line (test/setup/maintained-node.ts), and the folder soak on the latter. The server keeps its ledger in
// PostgreSQL, so a Node other than the one better-sqlite3 was built for can run it.

import { linkSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
// @ts-expect-error: the bench's plain JavaScript has no types
import { meanRss, soakLibrary, soakRemove, soakServe } from '../../bench/lib/memory-soak.mjs';
// @ts-expect-error: the bench's plain JavaScript has no types
import { preparePhotos } from '../../bench/lib/photo-set.mjs';
import { removeTempDirs, tempDir } from '../helpers/cli.js';
import { warmKeyModel } from '../helpers/fast-models.js';
import { envWithoutMallocSettings, MALLOC_TUNABLES } from '../helpers/malloc-settings.js';
import { freshDatabase } from '../helpers/postgres.js';

interface Sample {
  requests: number;
  rss: number;
}

const NODE = inject('maintainedNode');
/** The Nodes `rmbg serve` is soaked on: this one (Node 20 here) and a maintained one. */
const SERVE_NODES = [...new Set([process.execPath, NODE])].filter(Boolean);
const MiB = 2 ** 20;

/** The environment of a run as a user's: no RMBG_* of the developer's, and none of glibc's malloc settings. */
const ENV = envWithoutMallocSettings();

/** RSS early in the run (its 30th to 80th photo) and at its end (the last 50), in MiB: means over the windows, as
 * the memory a photo's buffers awaiting the collector hold comes and goes. */
function earlyAndLateMiB(samples: Sample[]): { early: number; late: number } {
  const last = samples.at(-1)?.requests ?? 0;
  return { early: meanRss(samples, 30, 80) / MiB, late: meanRss(samples, last - 50, last) / MiB };
}

/** RSS growth from early in the run to its end, in MiB. */
function growthMiB(samples: Sample[]): number {
  const { early, late } = earlyAndLateMiB(samples);
  return late - early;
}

/** Leveled off: at most this much more at the end than early on (without the fix: +60 to +140 MiB; with it under
 * 10 on a quiet machine, up to 35 on one running other soaks beside). */
const MAX_GROWTH_MIB = 40;
/** A soak's time limit: a loaded 2-core machine runs the serve soak in up to 5 minutes. */
const SOAK_TIMEOUT_MS = 480_000;

let photos: string[];
let model: string;

beforeAll(async () => {
  const work = tempDir('rmbg-soak-');
  photos = (await preparePhotos(work)).photos.map((photo: { file: string }) => photo.file);
  model = warmKeyModel();
});
afterAll(removeTempDirs);

describe.each(SERVE_NODES)('memory of rmbg serve over a long run on %s', (node) => {
  it(
    'rmbg serve: 300 mixed requests, the RSS levels off, within 5 %',
    async () => {
      const store = await freshDatabase();
      const { rss, statuses } = await soakServe({
        node,
        dataDir: tempDir(),
        photos,
        requests: 300,
        env: { ...ENV, RMBG_MODEL: model },
        flags: ['--store', store],
      });
      expect(statuses).toEqual({ 200: 270, 400: 30 });
      const { early, late } = earlyAndLateMiB(rss);
      const said = `RSS ${early.toFixed(1)} MiB early, ${late.toFixed(1)} MiB at the end`;
      expect(late - early, said).toBeLessThan(MAX_GROWTH_MIB);
      expect(late / early, said).toBeLessThan(1.05);
    },
    SOAK_TIMEOUT_MS,
  );
});

describe.skipIf(!NODE)(`memory over a long run (on ${NODE || 'no Node of a maintained line: skipped'})`, () => {
  it(
    'rmbg remove: a folder of 180 photos, the RSS levels off',
    async () => {
      const dir = tempDir();
      for (let copy = 1; copy <= 20; copy++) {
        const sub = path.join(dir, `copy-${copy}`);
        mkdirSync(sub);
        for (const photo of photos) linkSync(photo, path.join(sub, path.basename(photo)));
      }
      const outDir = tempDir();
      const { rss, summary } = await soakRemove({
        node: NODE,
        dir,
        outDir,
        env: { ...ENV, RMBG_MODEL: model },
        flags: ['--recursive'],
      });
      expect(summary).toMatchObject({ total: 180, done: 180, failed: 0 });
      expect(readdirSync(path.join(outDir, 'copy-20'))).toHaveLength(photos.length);
      expect(growthMiB(rss), 'RSS growth, MiB').toBeLessThan(MAX_GROWTH_MIB);
      rmSync(outDir, { recursive: true, force: true });
    },
    SOAK_TIMEOUT_MS,
  );
});

describe('memory over a long run, in a program using the library', () => {
  it(
    'removeBackground() 180 times in a process started with the thresholds docs/library.md gives: it levels off',
    async () => {
      const { rss } = await soakLibrary({
        photos,
        count: 180,
        model,
        env: { ...ENV, GLIBC_TUNABLES: MALLOC_TUNABLES },
      });
      expect(rss).toHaveLength(180);
      expect(growthMiB(rss), 'RSS growth, MiB').toBeLessThan(MAX_GROWTH_MIB);
    },
    SOAK_TIMEOUT_MS,
  );
});
