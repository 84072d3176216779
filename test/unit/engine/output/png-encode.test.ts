// The banded PNG encoder joins one deflate stream per band into one zlib stream. What a user sees of it: the
// file decodes (sharp/libspng, and zlib's own inflate, which checks the joined Adler-32) to exactly the pixels
// given, for RGB and RGBA, one band or many, any width.

import zlib from 'node:zlib';
import sharp from 'sharp';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pngChunks } from '../../../../src/engine/image/png-chunks.js';
import { adler32Combine, encodePng } from '../../../../src/engine/output/png-encode.js';
import { seededRandom } from '../../../helpers/seeded-random.js';

/** A photo-like image: smooth gradients, noise, and a transparent (zeroed) border as a cutout has. */
function image(width: number, height: number, channels: 3 | 4, seed: number): Buffer {
  const next = seededRandom(seed);
  const pixels = Buffer.alloc(width * height * channels);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const inside = x > width / 8 && x < (width * 7) / 8;
      const at = (y * width + x) * channels;
      if (channels === 4 && !inside) continue;
      pixels[at] = (x * 3 + y) & 255;
      pixels[at + 1] = (y * 2 + Math.floor(next() * 8)) & 255;
      pixels[at + 2] = Math.floor(next() * 256);
      if (channels === 4) pixels[at + 3] = 128 + Math.floor(next() * 128);
    }
  }
  return pixels;
}

async function encode(pixels: Buffer, width: number, height: number, channels: 3 | 4): Promise<Buffer> {
  const rowBytes = width * channels;
  const bands: number[] = [];
  const png = await encodePng(width, height, (top, count) => {
    bands.push(count);
    return { pixels: pixels.subarray(top * rowBytes, (top + count) * rowBytes), channels };
  });
  expect(bands.reduce((a, b) => a + b, 0)).toBe(height);
  return png;
}

function adler32(data: Buffer): number {
  let a = 1;
  let b = 0;
  for (const byte of data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

describe('encodePng', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it.each([
    { width: 1, height: 1, channels: 4 as const },
    { width: 7, height: 5, channels: 3 as const },
    { width: 333, height: 40, channels: 3 as const }, // rows not a multiple of four bytes
    { width: 1000, height: 1700, channels: 4 as const }, // four bands of 2 MB
    { width: 1001, height: 1300, channels: 3 as const }, // several bands, RGB
  ])('$width×$height, $channels channels: decodes to exactly the pixels given', async ({ width, height, channels }) => {
    const pixels = image(width, height, channels, width * height);
    const png = await encode(pixels, width, height, channels);

    const decoded = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    expect(decoded.info).toMatchObject({ width, height, channels });
    expect(decoded.data.equals(pixels)).toBe(true);

    // zlib's inflate checks the Adler-32 of the whole stream, which the encoder combined from the bands'.
    const chunks = [...pngChunks(png)];
    expect(chunks.map((c) => c.type).filter((t) => t !== 'IDAT')).toEqual(['IHDR', 'IEND']);
    const stream = Buffer.concat(chunks.filter((c) => c.type === 'IDAT').map((c) => c.data));
    expect(zlib.inflateSync(stream).length).toBe(height * (width * channels + 1));
  });

  it('filters rows that sit at any offset in memory, RGB rows of a multiple of four bytes included', async () => {
    for (const { width, height, channels, offset } of [
      { width: 300, height: 900, channels: 4 as const, offset: 1 }, // RGBA rows not 4-byte aligned
      { width: 400, height: 900, channels: 3 as const, offset: 0 }, // RGB rows of 1,200 bytes: four at a time
      { width: 400, height: 900, channels: 3 as const, offset: 2 },
    ]) {
      const pixels = image(width, height, channels, width + offset);
      const shifted = Buffer.alloc(pixels.length + offset);
      pixels.copy(shifted, offset);
      const png = await encode(shifted.subarray(offset), width, height, channels);
      const decoded = await sharp(png).raw().toBuffer();
      expect(decoded.equals(pixels), `${width}×${height}×${channels} at offset ${offset}`).toBe(true);
    }
  });

  it('rejects with the error of a band that cannot be made, and refuses an empty image', async () => {
    const pixels = image(1000, 1700, 4, 3);
    const failing = encodePng(1000, 1700, (top, count) => {
      if (top > 0) throw new Error(`no rows at ${top}`);
      return { pixels: pixels.subarray(0, count * 4000), channels: 4 };
    });
    await expect(failing).rejects.toThrow(/^no rows at \d+$/);
    await expect(encodePng(10, 0, () => ({ pixels: Buffer.alloc(0), channels: 4 }))).rejects.toThrow(RangeError);
    // A band of the wrong length would shift every row after it: refused, not encoded.
    await expect(encodePng(10, 2, () => ({ pixels: Buffer.alloc(40), channels: 4 }))).rejects.toThrow(
      /expected 2 rows/,
    );
  });

  it("rejects with a band's deflate error, and leaves nothing unhandled while the encoder waits on another band", async () => {
    // zlib cannot be made to fail with real input, so the second band's deflate reports an error at once while
    // the first one really runs: the encoder is then waiting on the first. vitest fails the run on any unhandled
    // rejection.
    const deflate = zlib.deflate;
    let calls = 0;
    const secondFails = ((
      data: Buffer,
      options: zlib.ZlibOptions,
      callback: (error: Error | null, result: Buffer) => void,
    ) => {
      calls++;
      if (calls === 2) setImmediate(() => callback(new Error('deflate failed'), Buffer.alloc(0)));
      else deflate(data, options, callback);
    }) as unknown as typeof zlib.deflate;
    vi.spyOn(zlib, 'deflate').mockImplementation(secondFails);
    const pixels = image(1000, 5000, 4, 5); // ten bands: more than the encoder keeps in flight
    const encoding = encodePng(1000, 5000, (top, count) => ({
      pixels: pixels.subarray(top * 4000, (top + count) * 4000),
      channels: 4,
    }));
    await expect(encoding).rejects.toThrow('deflate failed');
    expect(calls).toBeGreaterThan(4); // the failure came while the encoder waited and made more bands
  });

  it('combines Adler-32 checksums as zlib does, for any split', () => {
    const data = image(97, 31, 4, 7);
    for (const split of [0, 1, 100, 5551, 5552, 5553, data.length - 1, data.length]) {
      const [first, second] = [data.subarray(0, split), data.subarray(split)];
      expect(adler32Combine(adler32(first), adler32(second), second.length)).toBe(adler32(data));
    }
  });
});
