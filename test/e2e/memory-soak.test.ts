// A long run's memory levels off (issue #40): `rmbg remove` over a folder of 180 photos, and the library's
// removeBackground() 180 times in a program started as docs/library.md says, with the warm-key model (the pixels
// around the model are what allocate; the real model's memory is the same from the first photo on). Without fixed
// malloc thresholds glibc kept each thread's image-sized buffers: RSS rose by about 1 MB a photo. The folder soak
// runs on the set-up's Node of a maintained line (Node 20 cannot restart itself with them); `rmbg serve`'s soak is
// in memory-soak-serve.test.ts, a file of its own so that the suite runs both side by side.

import { linkSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: the bench's plain JavaScript has no types
import { soakLibrary, soakRemove } from '../../bench/lib/memory-soak.mjs';
import { tempDir } from '../helpers/cli.js';
import { MALLOC_TUNABLES } from '../helpers/malloc-settings.js';
import {
  ENV,
  growthMiB,
  MAX_FOLDER_GROWTH_MIB,
  MAX_GROWTH_MIB,
  medianGrowthMiB,
  NODE,
  SOAK_TIMEOUT_MS,
  soakInputs,
} from '../helpers/memory-soak.js';

const inputs = soakInputs();

describe.skipIf(!NODE)(`memory over a long run (on ${NODE || 'no Node of a maintained line: skipped'})`, () => {
  it(
    'rmbg remove: a folder of 180 photos, the RSS levels off',
    async () => {
      const dir = tempDir();
      for (let copy = 1; copy <= 20; copy++) {
        const sub = path.join(dir, `copy-${copy}`);
        mkdirSync(sub);
        for (const photo of inputs.photos) linkSync(photo, path.join(sub, path.basename(photo)));
      }
      const outDir = tempDir();
      const { rss, summary } = await soakRemove({
        node: NODE,
        dir,
        outDir,
        env: { ...ENV, RMBG_MODEL: inputs.model },
        flags: ['--recursive'],
      });
      expect(summary).toMatchObject({ total: 180, done: 180, failed: 0 });
      expect(readdirSync(path.join(outDir, 'copy-20'))).toHaveLength(inputs.photos.length);
      expect(medianGrowthMiB(rss), "growth of the RSS's median, MiB").toBeLessThan(MAX_FOLDER_GROWTH_MIB);
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
        photos: inputs.photos,
        count: 180,
        model: inputs.model,
        env: { ...ENV, GLIBC_TUNABLES: MALLOC_TUNABLES },
      });
      expect(rss).toHaveLength(180);
      expect(growthMiB(rss), 'RSS growth, MiB').toBeLessThan(MAX_GROWTH_MIB);
    },
    SOAK_TIMEOUT_MS,
  );
});
