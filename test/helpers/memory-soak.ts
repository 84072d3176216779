// The memory soaks' shared parts (test/e2e/memory-soak*.test.ts): the photos, the model, the user's environment and
// how an RSS curve is read. The soaks are two files so that the suite runs them side by side.

import { afterAll, beforeAll, inject } from 'vitest';
// @ts-expect-error: the bench's plain JavaScript has no types
import { median } from '../../bench/lib/inputs.mjs';
// @ts-expect-error: the bench's plain JavaScript has no types
import { preparePhotos } from '../../bench/lib/photo-set.mjs';
import { removeTempDirs, tempDir } from './cli.js';
import { warmKeyModel } from './fast-models.js';
import { envWithoutMallocSettings } from './malloc-settings.js';

export interface Sample {
  requests: number;
  rss: number;
}

/** The set-up's Node of a maintained line (test/setup/maintained-node.ts), or '' where there is none. */
export const NODE = inject('maintainedNode');
const MiB = 2 ** 20;

/** The environment of a run as a user's: no RMBG_* of the developer's, and none of glibc's malloc settings. */
export const ENV = envWithoutMallocSettings();

/** The RSS readings early in the run (its 30th to 80th request or photo) and at its end (the last 50), in MiB: the
 * two windows every soak compares. */
function earlyAndLateReadings(samples: Sample[]): { early: number[]; late: number[] } {
  const last = samples.at(-1)?.requests ?? 0;
  const within = (from: number, to: number) =>
    samples.filter(({ requests }) => requests >= from && requests <= to).map(({ rss }) => rss / MiB);
  return { early: within(30, 80), late: within(last - 50, last) };
}

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

/** RSS early in the run and at its end, in MiB: means over the windows, as the memory a photo's buffers awaiting
 * the collector hold comes and goes. */
export function earlyAndLateMiB(samples: Sample[]): { early: number; late: number } {
  const { early, late } = earlyAndLateReadings(samples);
  return { early: mean(early), late: mean(late) };
}

/** RSS growth from early in the run to its end, in MiB. */
export function growthMiB(samples: Sample[]): number {
  const { early, late } = earlyAndLateMiB(samples);
  return late - early;
}

/** Growth of the RSS's median, in MiB: the middle reading late in the run less the middle one early on. For a run
 * read while photos are in flight (the folder's, at each JSON line): their buffers move any one reading by up to
 * ±60 MiB, and the lowest of 50 readings with them (it swung from +19 to +67 MiB between runs of one build), while
 * memory kept for good raises most readings, the middle one too. */
export function medianGrowthMiB(samples: Sample[]): number {
  const { early, late } = earlyAndLateReadings(samples);
  return median(late) - median(early);
}

/** Leveled off: at most this much more at the end than early on (without the fix: +54 to +140 MiB, the serve soak's
 * growth done by its 80th request; with it under 15 on a quiet machine, up to 35 beside other soaks). */
export const MAX_GROWTH_MIB = 40;
/** A folder's run levels off more slowly: the allocator's free lists settle over its first thousand photos (a run of
 * 1,980: +37 MiB from its 100th photo to its 1,900th, bench/RESULTS.md), and 180 photos grew 3 to 38 MiB; without
 * the fixed thresholds, +117 MiB. */
export const MAX_FOLDER_GROWTH_MIB = 70;
/** A soak's time limit: a loaded 2-core machine runs the serve soak in up to 5 minutes. */
export const SOAK_TIMEOUT_MS = 480_000;

/** The soak's photos (the bench's mixed set) and the warm-key model, made once per file. */
export function soakInputs(): { photos: string[]; model: string } {
  const inputs = { photos: [] as string[], model: '' };
  beforeAll(async () => {
    const work = tempDir('rmbg-soak-');
    inputs.photos = (await preparePhotos(work)).photos.map((photo: { file: string }) => photo.file);
    inputs.model = warmKeyModel();
  });
  afterAll(removeTempDirs);
  return inputs;
}
