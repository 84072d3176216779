// The mask's upsampling to the result size: centre-aligned bilinear within 1/255 of the exact (floating-point)
// formula, flat masks stay exactly flat (format=auto reads "all 255" as opaque), and a shape shrunk the way
// the model's input is and scaled back lands where it was (no half-pixel shift).

import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { isUpsizing, upsampleMask } from '../../../../src/engine/output/mask-upsample.js';

/** Bilinear with centre-aligned samples, in floating point: the definition the integer pass approximates. */
function exact(src: Uint8Array, sw: number, sh: number, dw: number, dh: number): Uint8Array {
  const out = new Uint8Array(dw * dh);
  const tap = (d: number, from: number, to: number) => {
    const s = Math.min(Math.max((d + 0.5) * (from / to) - 0.5, 0), from - 1);
    const i = Math.min(Math.floor(s), Math.max(from - 2, 0));
    return { i, next: Math.min(i + 1, from - 1), f: s - i };
  };
  for (let y = 0; y < dh; y++) {
    const r = tap(y, sh, dh);
    for (let x = 0; x < dw; x++) {
      const c = tap(x, sw, dw);
      const at = (row: number, col: number) => src[row * sw + col] as number;
      const top = at(r.i, c.i) * (1 - c.f) + at(r.i, c.next) * c.f;
      const bottom = at(r.next, c.i) * (1 - c.f) + at(r.next, c.next) * c.f;
      out[y * dw + x] = Math.round(top * (1 - r.f) + bottom * r.f);
    }
  }
  return out;
}

/** A soft-edged blob with flat background and interior, like a model's mask. */
function softMask(width: number, height: number): Uint8Array {
  const mask = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const d = Math.hypot((x - width * 0.45) / (width * 0.3), (y - height * 0.55) / (height * 0.35));
      mask[y * width + x] = Math.max(0, Math.min(255, Math.round((1.08 - d) * 1200)));
    }
  }
  return mask;
}

describe('upsampleMask', () => {
  it('is within 1/255 of exact centre-aligned bilinear, at photo sizes and at odd small ones', () => {
    const cases: [Uint8Array, number, number, number, number][] = [[softMask(256, 256), 256, 256, 913, 685]];
    for (let k = 0; k < 40; k++) {
      const sw = 1 + ((k * 7) % 13);
      const sh = 1 + ((k * 5) % 11);
      const src = Uint8Array.from({ length: sw * sh }, (_, i) => ((i * 97 + k * 31) % 256 < 128 ? 0 : (i * 53) % 256));
      cases.push([src, sw, sh, sw + ((k * 3) % 17), sh + ((k * 11) % 19)]);
    }
    for (const [src, sw, sh, dw, dh] of cases) {
      const ours = upsampleMask(src, { width: sw, height: sh }, { width: dw, height: dh });
      const reference = exact(src, sw, sh, dw, dh);
      let worst = 0;
      for (let i = 0; i < reference.length; i++)
        worst = Math.max(worst, Math.abs((ours[i] as number) - (reference[i] as number)));
      expect(worst, `${sw}×${sh} → ${dw}×${dh}`).toBeLessThanOrEqual(1);
    }
  });

  it('keeps a flat mask exactly flat (all 255 stays opaque, all 0 stays clear)', () => {
    for (const value of [0, 255, 77]) {
      const out = upsampleMask(
        new Uint8Array(64 * 48).fill(value),
        { width: 64, height: 48 },
        { width: 1001, height: 777 },
      );
      expect(out.every((v) => v === value)).toBe(true);
    }
  });

  it('puts a shape shrunk to the model size and scaled back where it was', async () => {
    const [W, H] = [1825, 1369];
    const truth = Buffer.alloc(W * H);
    const [cx, cy] = [900.3, 700.7];
    for (let y = 0; y < H; y++)
      for (let x = 0; x < W; x++)
        truth[y * W + x] = Math.hypot((x + 0.5 - cx) / 600, (y + 0.5 - cy) / 450) <= 1 ? 255 : 0;
    const small = await sharp(truth, { raw: { width: W, height: H, channels: 1 } })
      .resize(512, 512, { fit: 'fill' })
      .toColourspace('b-w')
      .raw()
      .toBuffer();
    const back = upsampleMask(small, { width: 512, height: 512 }, { width: W, height: H });
    const centroid = (img: Uint8Array): [number, number] => {
      let sx = 0;
      let sy = 0;
      let m = 0;
      for (let y = 0; y < H; y++)
        for (let x = 0; x < W; x++) {
          const v = img[y * W + x] as number;
          sx += v * x;
          sy += v * y;
          m += v;
        }
      return [sx / m, sy / m];
    };
    const [tx, ty] = centroid(truth);
    const [bx, by] = centroid(back);
    expect(Math.abs(bx - tx)).toBeLessThan(0.1);
    expect(Math.abs(by - ty)).toBeLessThan(0.1);
  });

  it('refuses to shrink (that needs a wider filter: the pipeline uses sharp for it)', () => {
    expect(isUpsizing({ width: 10, height: 10 }, { width: 20, height: 9 })).toBe(false);
    expect(() => upsampleMask(new Uint8Array(100), { width: 10, height: 10 }, { width: 20, height: 9 })).toThrow(
      RangeError,
    );
  });
});
