// The cutout's confidence (src/engine/output/mask-confidence.ts) on photos made here, through the real engine and
// the real default model (ISNet): a clear subject on a plain background, the same subject blended into a noisy
// background, and an empty photo are ordered as a person would order them. What computing it costs beside the
// model is measured by bench/confidence-cost.mjs, not here.

import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALLER_DEFAULT_OPTIONS } from '../../../src/api/options.js';
import { SUSPECT_BELOW } from '../../../src/engine/output/mask-confidence.js';
import { createEngine } from '../../../src/engine/index.js';
import type { Engine, EngineResult } from '../../../src/engine/types.js';
import { ROOT } from '../../helpers/cli.js';
import { seededRandom } from '../../helpers/seeded-random.js';

const ASTRONAUT = path.join(ROOT, 'samples/astronaut.png'); // 512×512, a person on a dark background

/** The astronaut, its contrast cut to a third, under soft-light noise: a subject blended into its background. */
async function blendedPhoto(): Promise<Buffer> {
  const size = 512;
  const random = seededRandom(36);
  const noise = Buffer.alloc(size * size * 3);
  // Gaussian-ish (sum of three uniforms), mean 128, spread about ±70, the same on every run.
  for (let i = 0; i < noise.length; i++)
    noise[i] = Math.max(0, Math.min(255, 128 + (random() + random() + random() - 1.5) * 140));
  const faded = await sharp(ASTRONAUT).removeAlpha().linear(0.35, 80).png().toBuffer();
  const grain = await sharp(noise, { raw: { width: size, height: size, channels: 3 } })
    .png()
    .toBuffer();
  return sharp(faded)
    .composite([{ input: grain, blend: 'soft-light' }])
    .jpeg({ quality: 90 })
    .toBuffer();
}

describe('the confidence on the real model', () => {
  let engine: Engine;
  const results: Record<string, EngineResult> = {};

  beforeAll(async () => {
    engine = await createEngine({ device: 'cpu' });
    const photos = {
      clear: await sharp(ASTRONAUT).jpeg({ quality: 90 }).toBuffer(),
      blended: await blendedPhoto(),
      empty: await sharp({ create: { width: 512, height: 512, channels: 3, background: '#cedeec' } })
        .jpeg()
        .toBuffer(),
    };
    for (const [name, photo] of Object.entries(photos))
      results[name] = await engine.cutOut(photo, CALLER_DEFAULT_OPTIONS);
  }, 300_000);

  afterAll(async () => {
    await engine?.close();
  });

  it('orders a clear subject, a blended one and an empty photo as a person would', () => {
    const { clear, blended, empty } = results as Record<'clear' | 'blended' | 'empty', EngineResult>;
    console.info(
      `confidence: clear ${clear.confidence}, blended ${blended.confidence}, empty ${empty.confidence} (ISNet, cpu)`,
    );
    expect(clear.confidence).toBeGreaterThan(blended.confidence);
    expect(blended.confidence).toBeGreaterThan(empty.confidence);
    // The clear cutout is not flagged; the empty one and the blended one are.
    expect(clear.confidence).toBeGreaterThanOrEqual(0.9);
    expect(blended.confidence).toBeLessThan(SUSPECT_BELOW);
    expect(empty.confidence).toBe(0);
  });
});
