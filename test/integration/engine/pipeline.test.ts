// The engine end to end with real sharp: sizes, formats, alpha, crop, bg_color, EXIF orientation, unusual colour
// models, and inputs that must be refused. One test runs the real ISNet model (a real cutout of a photo); the rest
// run the warm-key model (test/helpers/fast-models.ts, a 1×1 convolution that keeps jpegPhoto's disc and removes
// its background in milliseconds), since they assert geometry, formats and colour, not what a model sees.

import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { API_FORMAT_NAMES, OUTPUT_FORMATS } from '../../../src/api/media-types.js';
import { DEFAULT_OPTIONS, parseRemoveOptions, type RemoveOptions } from '../../../src/api/options.js';
import { createEngine } from '../../../src/engine/index.js';
import type { Engine } from '../../../src/engine/types.js';
import {
  cmykJpeg,
  greyscaleJpeg,
  jpegPhoto,
  palettePngWithTrns,
  png16bit,
  pngWithBadCrc,
  truncatedJpeg,
  truncatedPng,
} from '../../helpers/hostile-images.js';
import { warmKeyModel } from '../../helpers/fast-models.js';

let engine: Engine;
let realEngine: Engine;
beforeAll(async () => {
  [engine, realEngine] = await Promise.all([createEngine({ model: warmKeyModel() }), createEngine()]);
});
afterAll(async () => {
  await Promise.all([engine?.close(), realEngine?.close()]);
});

const opts = (fields: Record<string, unknown>): RemoveOptions => parseRemoveOptions(fields, DEFAULT_OPTIONS);

async function pixelAt(image: Buffer, x: number, y: number) {
  const { data, info } = await sharp(image).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * 4;
  return { r: data[i] as number, g: data[i + 1] as number, b: data[i + 2] as number, a: data[i + 3] as number };
}

describe('result size', () => {
  it('size ceilings keep the aspect ratio and never upscale', async () => {
    const photo = await jpegPhoto(1200, 900); // 1.08 MP
    const preview = await engine.cutOut(photo, opts({ size: 'preview' }));
    expect(preview.width * preview.height).toBeLessThanOrEqual(250_000);
    expect(preview.width * preview.height).toBeGreaterThan(240_000);
    expect(Math.abs(preview.width / preview.height - 4 / 3)).toBeLessThan(0.01);
    const meta = await sharp(preview.data).metadata();
    expect([meta.width, meta.height]).toEqual([preview.width, preview.height]);

    // medium (1.5 MP) and 50MP are above the input: the input size comes back, never larger.
    for (const size of ['medium', '50MP']) {
      const result = await engine.cutOut(photo, opts({ size }));
      expect([result.width, result.height]).toEqual([1200, 900]);
    }
  });

  it('PNG and format=auto are capped at 10 MP; JPG is not', async () => {
    const photo = await jpegPhoto(4000, 3000); // 12 MP
    const png = await engine.cutOut(photo, opts({ size: 'full', format: 'png' }));
    expect(png.width * png.height).toBeLessThanOrEqual(10_000_000);
    expect(png.width * png.height).toBeGreaterThan(9_900_000);
    const jpg = await engine.cutOut(photo, opts({ size: 'full', format: 'jpg' }));
    expect([jpg.width, jpg.height]).toEqual([4000, 3000]);
    const hd = await engine.cutOut(photo, opts({ size: 'hd', format: 'jpg' }));
    expect(hd.width * hd.height).toBeLessThanOrEqual(4_000_000);
  });
});

describe('cutout', () => {
  it('makes the background transparent and keeps the subject opaque (PNG, zeroed colour under alpha 0)', async () => {
    // The real model: the one test here whose pixels are a model's judgement of subject and background.
    const result = await realEngine.cutOut(await jpegPhoto(400, 300), opts({}));
    expect(result.format).toBe('png');
    expect(result.mimeType).toBe('image/png');
    expect(result.data.subarray(1, 4).toString()).toBe('PNG');
    const meta = await sharp(result.data).metadata();
    expect(meta.channels).toBe(4);
    expect(await pixelAt(result.data, 2, 2)).toEqual({ r: 0, g: 0, b: 0, a: 0 });
    const centre = await pixelAt(result.data, 200, 150);
    expect(centre.a).toBe(255);
    expect(centre.r).toBeGreaterThan(centre.b); // the orange disc, not a grey or blue background
    // The disc is centred with a diameter of 60 % of the short side (180 px).
    const box = result.foreground;
    expect(box.left).toBeGreaterThan(90);
    expect(box.left).toBeLessThan(125);
    expect(box.width).toBeGreaterThan(160);
    expect(box.width).toBeLessThan(215);
    expect(box.top + box.height / 2).toBeCloseTo(150, -1);
  });

  it('crop trims to the foreground box and reports it on the input canvas', async () => {
    const result = await engine.cutOut(await jpegPhoto(400, 300), opts({ crop: 'true' }));
    expect(result.width).toBe(result.foreground.width);
    expect(result.height).toBe(result.foreground.height);
    expect(result.width).toBeGreaterThan(160);
    expect(result.width).toBeLessThan(215);
    expect(result.foreground.left).toBeGreaterThan(90);
    const corner = await pixelAt(result.data, 0, 0);
    expect(corner.a).toBeLessThan(64); // a disc's bounding box corner is outside the disc
  });

  it('bg_color flattens: an opaque colour gives a JPG with that colour behind the subject', async () => {
    const result = await engine.cutOut(await jpegPhoto(400, 300), opts({ bg_color: '81d4fa' }));
    expect(result.format).toBe('jpg');
    expect(result.data.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    const corner = await pixelAt(result.data, 3, 3);
    expect(Math.abs(corner.r - 0x81)).toBeLessThan(6);
    expect(Math.abs(corner.g - 0xd4)).toBeLessThan(6);
    expect(Math.abs(corner.b - 0xfa)).toBeLessThan(6);
  });

  it('bg_color with alpha keeps a PNG with that alpha behind the subject; CSS names work', async () => {
    const half = await engine.cutOut(await jpegPhoto(400, 300), opts({ bg_color: '#00ff0080' }));
    expect(half.format).toBe('png');
    expect(await pixelAt(half.data, 2, 2)).toEqual({ r: 0, g: 255, b: 0, a: 128 });
    const named = await engine.cutOut(await jpegPhoto(400, 300), opts({ bg_color: 'rebeccapurple', format: 'png' }));
    expect(await pixelAt(named.data, 2, 2)).toEqual({ r: 102, g: 51, b: 153, a: 255 });
  });

  it('format=jpg flattens transparency onto white; format=webp keeps alpha', async () => {
    const jpg = await engine.cutOut(await jpegPhoto(400, 300), opts({ format: 'jpg' }));
    const corner = await pixelAt(jpg.data, 2, 2);
    expect(Math.min(corner.r, corner.g, corner.b)).toBeGreaterThan(245);
    const webp = await engine.cutOut(await jpegPhoto(400, 300), opts({ format: 'webp' }));
    expect(webp.mimeType).toBe('image/webp');
    expect(webp.data.subarray(8, 12).toString()).toBe('WEBP');
    expect((await pixelAt(webp.data, 2, 2)).a).toBe(0);
    expect((await pixelAt(webp.data, 200, 150)).a).toBeGreaterThan(250);
  });

  // The API's formats; the layered ones (psd, tiff) are read back by real programs in e2e/remove-mask-and-layers.test.ts.
  it.each(API_FORMAT_NAMES)(
    'format=%s keeps alpha exactly when its row of the format table says so',
    async (format) => {
      const result = await engine.cutOut(await jpegPhoto(400, 300), opts({ format }));
      const meta = await sharp(result.data).metadata();
      const corner = await pixelAt(result.data, 2, 2);
      if (OUTPUT_FORMATS[format].keepsAlpha) {
        expect([meta.hasAlpha, corner.a]).toEqual([true, 0]);
      } else {
        expect(meta.hasAlpha).toBe(false);
        expect(Math.min(corner.r, corner.g, corner.b)).toBeGreaterThan(245); // flattened onto white
      }
    },
  );
});

describe('EXIF orientation', () => {
  /** An upright 400×300 photo with the disc in the top-left quadrant, stored turned for `orientation`. */
  async function orientedPhoto(orientation: 3 | 6 | 8): Promise<Buffer> {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300"><rect width="100%" height="100%" fill="#cedeec"/><circle cx="100" cy="80" r="60" fill="#e8601c"/></svg>`;
    const upright = await sharp(Buffer.from(svg)).png().toBuffer();
    const turn = { 3: 180, 6: 270, 8: 90 }[orientation];
    const stored = await sharp(upright).rotate(turn).png().toBuffer();
    return sharp(stored).jpeg({ quality: 95 }).withMetadata({ orientation }).toBuffer();
  }

  for (const orientation of [3, 6, 8] as const) {
    it(`orientation ${orientation} comes out upright, with the box on the upright canvas`, async () => {
      const input = await orientedPhoto(orientation);
      const stored = await sharp(input).metadata();
      expect(stored.orientation).toBe(orientation);
      const result = await engine.cutOut(input, opts({ size: 'full' }));
      expect([result.width, result.height]).toEqual([400, 300]);
      const { left, top, width, height } = result.foreground;
      expect(left + width / 2).toBeCloseTo(100, -1.3);
      expect(top + height / 2).toBeCloseTo(80, -1.3);
      expect((await pixelAt(result.data, 100, 80)).a).toBe(255);
      expect((await pixelAt(result.data, 350, 250)).a).toBe(0);
      expect((await sharp(result.data).metadata()).orientation).toBeUndefined();
    });
  }
});

describe('unusual inputs are handled, broken ones refused', () => {
  it.each([
    ['CMYK JPEG', cmykJpeg],
    ['16-bit PNG', png16bit],
    ['greyscale JPEG', greyscaleJpeg],
    ['palette PNG with tRNS', palettePngWithTrns],
  ])('%s gives an sRGB cutout with alpha', async (_name, make) => {
    const input = await make();
    const result = await engine.cutOut(input, opts({ format: 'png' }));
    const meta = await sharp(result.data).metadata();
    expect(meta.channels).toBe(4);
    expect(meta.space).toBe('srgb');
    expect(meta.depth).toBe('uchar');
    const source = await sharp(input).metadata();
    expect([result.width, result.height]).toEqual([source.width, source.height]);
  });

  it.each([
    ['truncated JPEG', truncatedJpeg],
    ['truncated PNG', truncatedPng],
    ['PNG with a wrong CRC', () => pngWithBadCrc()],
  ])('%s is refused as corrupt_image, not turned into a grey image', async (_name, make) => {
    const error = await engine.cutOut(await make(), opts({})).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RmbgError);
    expect((error as RmbgError).code).toBe('corrupt_image');
    expect((error as RmbgError).status).toBe(400);
  });
});
