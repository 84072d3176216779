// compose() takes a fast path for the default result (transparent background, no colour); it claims the
// same pixels as the general loop, which this holds it to on random images, masks and input alpha.

import { describe, expect, it } from 'vitest';
import { compose, composeLoop, type ComposeInput } from '../../../../src/engine/output/compose.js';
import { seededRandom } from '../../../helpers/seeded-random.js';

function randomInput(seed: number, channels: 3 | 4): ComposeInput {
  const next = seededRandom(seed);
  const width = 1 + Math.floor(next() * 40);
  const height = 1 + Math.floor(next() * 40);
  const byte = () => {
    // Many 0s and 255s, as real masks have, besides everything in between.
    const r = next();
    return r < 0.3 ? 0 : r < 0.6 ? 255 : Math.floor(next() * 256);
  };
  const pixels = Buffer.from(Array.from({ length: width * height * channels }, byte));
  const mask = Buffer.from(Array.from({ length: width * height }, byte));
  return { pixels, channels, mask, width, height, background: undefined, opaque: false };
}

describe('compose', () => {
  it('gives the same pixels into a reused buffer that holds an earlier image, on both paths', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const input = randomInput(seed, seed % 2 === 0 ? 4 : 3);
      const earlier = Buffer.alloc(input.width * input.height * 4 + 8, 0xa5); // a pooled buffer is often larger
      for (const opaque of [false, true]) {
        const fresh = compose({ ...input, opaque });
        const reused = compose({ ...input, opaque, out: Buffer.from(earlier) });
        expect(reused.pixels.equals(fresh.pixels), `seed ${seed}, opaque ${opaque}`).toBe(true);
      }
    }
  });

  it('gives the same pixels on its fast path as the general loop, for RGB and RGBA inputs', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const input = randomInput(seed, seed % 2 === 0 ? 4 : 3);
      const fast = compose(input);
      const general = composeLoop(input);
      expect(fast.channels, `seed ${seed}`).toBe(general.channels);
      expect(fast.pixels.equals(general.pixels), `seed ${seed}`).toBe(true);
    }
  });
});
