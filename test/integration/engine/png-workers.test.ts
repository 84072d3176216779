// PNG results are composed and encoded on worker threads (png-workers.ts) to keep the main thread free for the GPU;
// they must be the very bytes the main thread makes, whatever the pixels' place in memory and however many at once.

import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { composeAndEncodePng, type PngJob } from '../../../src/engine/output/png-job.js';
import { encodePngOnWorker, PNG_WORKERS } from '../../../src/engine/output/png-workers.js';
import { seededRandom } from '../../helpers/seeded-random.js';

function randomJob(seed: number, width: number, height: number, channels: 3 | 4): PngJob {
  const next = seededRandom(seed);
  const byte = () => {
    const r = next();
    return r < 0.3 ? 0 : r < 0.6 ? 255 : Math.floor(next() * 256);
  };
  // The pixels sit at an odd offset inside a larger buffer, as a subarray of sharp's output may.
  const backing = Buffer.from(Array.from({ length: width * height * channels + 3 }, byte));
  const pixels = backing.subarray(3);
  const mask = Buffer.from(Array.from({ length: width * height }, byte));
  const background = seed % 3 === 0 ? { r: 10, g: 200, b: 30, alpha: 0.5 } : undefined;
  return { pixels, channels, mask, width, height, background };
}

describe('encodePngOnWorker', () => {
  it('makes the same bytes as the main thread, RGB and RGBA, with and without a background', async () => {
    for (const [seed, channels] of [
      [1, 3],
      [2, 4],
      [3, 4],
    ] as const) {
      const job = randomJob(seed, 613, 1409, channels); // several bands of 2 MB
      const [onWorker, onMain] = await Promise.all([encodePngOnWorker(job), composeAndEncodePng(job)]);
      expect(onWorker.equals(onMain), `seed ${seed}`).toBe(true);
      const decoded = await sharp(onWorker).metadata();
      expect([decoded.width, decoded.height, decoded.channels]).toEqual([613, 1409, 4]);
    }
  });

  it('gives each of many jobs at once its own result', async () => {
    const jobs = Array.from({ length: PNG_WORKERS * 3 + 1 }, (_, i) => randomJob(100 + i, 20 + i, 30, 4));
    const results = await Promise.all(jobs.map((job) => encodePngOnWorker(job)));
    for (const [i, job] of jobs.entries()) expect(results[i]?.equals(await composeAndEncodePng(job))).toBe(true);
  });
});
