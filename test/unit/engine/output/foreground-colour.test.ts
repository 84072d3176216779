// Blur fusion (src/engine/output/foreground-colour.ts) on an image whose foreground colour is known: a red subject
// fading into a green background over a soft ramp. Under the soft alpha the photo's pixels mix in the green; the
// estimate is the red again, and pixels outside the ramp keep their bytes.

import { describe, expect, it } from 'vitest';
import { estimateForeground } from '../../../../src/engine/output/foreground-colour.js';

const FOREGROUND = [200, 60, 40];
const BACKGROUND = [30, 190, 60];

/** width×height, alpha 255 left of the ramp, 0 right of it, falling linearly across `ramp` columns. */
function rampImage(width: number, height: number, ramp: number) {
  const mask = new Uint8Array(width * height);
  const pixels = new Uint8Array(width * height * 3);
  const start = (width - ramp) >> 1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const a = Math.min(255, Math.max(0, Math.round(255 * (1 - (x - start) / ramp))));
      mask[i] = a;
      for (let k = 0; k < 3; k++)
        pixels[i * 3 + k] = Math.round(((FOREGROUND[k] as number) * a + (BACKGROUND[k] as number) * (255 - a)) / 255);
    }
  }
  return { pixels, mask, width, height, channels: 3 as const };
}

/** The mean distance, in levels, of the soft pixels' colours from the foreground's. */
function softError(image: ReturnType<typeof rampImage>): number {
  let sum = 0;
  let count = 0;
  image.mask.forEach((a, i) => {
    if (a === 0 || a === 255) return;
    for (let k = 0; k < 3; k++) sum += Math.abs((image.pixels[i * 3 + k] as number) - (FOREGROUND[k] as number));
    count += 3;
  });
  return sum / count;
}

describe('estimateForeground', () => {
  for (const [width, height] of [
    [300, 200],
    [3000, 2000], // past the grid's size: the means are read between cells
  ] as const) {
    it(`recovers the foreground's colour under a soft edge, ${width}×${height}`, () => {
      const image = rampImage(width, height, 40);
      const before = softError(image);
      const original = Uint8Array.from(image.pixels);
      estimateForeground(image);
      const after = softError(image);
      const message = `soft pixels: ${before.toFixed(1)} levels from the foreground's colour before, ${after.toFixed(1)} after`;
      expect(after, message).toBeLessThan(before / 3);
      let changedOutside = 0;
      image.mask.forEach((a, i) => {
        if (a !== 0 && a !== 255) return;
        for (let k = 0; k < 3; k++) if (image.pixels[i * 3 + k] !== original[i * 3 + k]) changedOutside++;
      });
      expect(changedOutside, 'bytes changed where alpha is 0 or 255').toBe(0);
    });
  }

  it('leaves a mask without soft pixels as it is', () => {
    const image = rampImage(50, 20, 1);
    const original = Uint8Array.from(image.pixels);
    estimateForeground(image);
    expect(Buffer.from(image.pixels).equals(Buffer.from(original))).toBe(true);
  });
});
