// Clean edges (issue #45), as a user sees them: a composite whose foreground colours are known (the cat of
// samples/chelsea.png under its own cutout's mask, over samples/coffee.png mirrored) cut out with the real model.
// Laid over a new background, the default cutout is closer to the truth in the soft band than the photo's own
// colours; and with cleanEdges off, the cutout keeps the photo's pixels wherever it is not transparent, as before.

import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRmbg, type Rmbg } from '../../src/index.js';
import { compositeOver, edgeError, splitRgba } from '../../bench/lib/edge-composites.mjs';
import { ROOT } from '../helpers/cli.js';

const FOREGROUND = path.join(ROOT, 'samples/chelsea.png');
const BACKGROUND = path.join(ROOT, 'samples/coffee.png');
/** The new background the cutout is laid on: a colour unlike both photos'. */
const NEW_BACKGROUND = [40, 90, 200];
const OPTIONS = { size: 'full', format: 'png' } as const;

let rmbg: Rmbg;
beforeAll(() => {
  rmbg = createRmbg();
});
afterAll(() => rmbg?.close());

/** A cutout's RGB and alpha, decoded. */
async function pixelsOf(png: Buffer) {
  return splitRgba(await sharp(png).ensureAlpha().raw().toBuffer());
}

describe('clean edges', () => {
  it("brings a composite's cutout closer to its true colours over a new background; off keeps the photo's", async () => {
    const { data, info } = await sharp(FOREGROUND).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const { width, height } = info;
    const foregroundCut = await rmbg.removeBackground(FOREGROUND, { ...OPTIONS, cleanEdges: false });
    const truth = { pixels: data, alpha: (await pixelsOf(foregroundCut.data)).alpha };
    const photo = await compositeOver({ ...truth, width, height }, BACKGROUND, true);
    const png = await sharp(photo, { raw: { width, height, channels: 3 } })
      .png()
      .toBuffer();

    const [cleaned, kept] = await Promise.all([
      rmbg.removeBackground(png, OPTIONS).then((result) => pixelsOf(result.data)),
      rmbg.removeBackground(png, { ...OPTIONS, cleanEdges: false }).then((result) => pixelsOf(result.data)),
    ]);
    expect(Buffer.compare(cleaned.alpha, kept.alpha), 'the mask is the same either way').toBe(0);
    const over = [NEW_BACKGROUND];
    const before = edgeError(truth, kept, over);
    const after = edgeError(truth, cleaned, over);
    const figures = `${after.levels.toFixed(2)} levels from the truth with clean edges, ${before.levels.toFixed(2)} without, over ${after.band} soft pixels`;
    expect(after.band, figures).toBeGreaterThan(1000);
    expect(after.levels, figures).toBeLessThan(before.levels);

    let changed = 0;
    for (let i = 0; i < width * height; i++) {
      if (kept.alpha[i] === 0) continue;
      for (let k = 0; k < 3; k++) if (kept.pixels[i * 3 + k] !== photo[i * 3 + k]) changed++;
    }
    expect(changed, 'bytes of the photo changed under a visible pixel with cleanEdges off').toBe(0);
  });
});
