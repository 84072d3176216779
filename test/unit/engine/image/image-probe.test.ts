// The input gate: what probeImage accepts and describes, what it refuses with which code and message,
// that the refusals of huge headers happen without decoding, and which sharp failOn level catches damage
// that only decoding can see (documented for the decode stage).

import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { RmbgError } from '../../../../src/api/errors.js';
import { LIMITS } from '../../../../src/api/limits.js';
import { probeImage } from '../../../../src/engine/image/image-probe.js';
import { decoderReason } from '../../../../src/engine/image/input-errors.js';
import { PNG_SIGNATURE, pngChunk, pngChunks } from '../../../../src/engine/image/png-chunks.js';
import { webpChunks } from '../../../../src/engine/image/webp-chunks.js';
import { MARKER_COLOURS, jpegWithOrientation, markerBoxes } from '../../../helpers/exif-images.js';
import {
  animatedWebp,
  apng,
  avifOrHeif,
  bmp,
  cmykJpeg,
  gif,
  greyscaleJpeg,
  jpegBombHeader,
  jpegPhoto,
  oversizedJpeg,
  PHOTO_COLOURS,
  paddedJpeg,
  palettePngWithTrns,
  png16bit,
  pngBombHeader,
  pngBomb,
  pngPhoto,
  pngWithBadCrc,
  svg,
  tiff,
  tinyPng,
  truncatedJpeg,
  truncatedPng,
  truncatedWebp,
  widePng,
} from '../../../helpers/hostile-images.js';

async function refusal(input: Buffer): Promise<RmbgError> {
  try {
    await probeImage(input);
  } catch (error) {
    expect(error).toBeInstanceOf(RmbgError);
    return error as RmbgError;
  }
  throw new Error('probeImage accepted the image');
}

describe('probeImage accepts and describes', () => {
  it('a JPEG photo', async () => {
    expect(await probeImage(await jpegPhoto(320, 240))).toEqual({
      format: 'jpeg',
      width: 320,
      height: 240,
      orientedWidth: 320,
      orientedHeight: 240,
      orientation: 1,
      hasAlpha: false,
      channels: 3,
      space: 'srgb',
      depth: 'uchar',
      isPalette: false,
    });
  });

  it('a PNG and a WebP, by their content', async () => {
    expect(await probeImage(await pngPhoto(200, 100))).toMatchObject({
      format: 'png',
      width: 200,
      height: 100,
      hasAlpha: false,
    });
    const webp = await sharp(await jpegPhoto(120, 90))
      .webp()
      .toBuffer();
    expect(await probeImage(webp)).toMatchObject({ format: 'webp', width: 120, height: 90, hasAlpha: false });
    const webpWithAlpha = await sharp(await palettePngWithTrns())
      .webp({ lossless: true })
      .toBuffer();
    expect(await probeImage(webpWithAlpha)).toMatchObject({ format: 'webp', hasAlpha: true, channels: 4 });
  });

  it('a CMYK JPEG, a greyscale JPEG, a 16-bit PNG and a palette PNG with tRNS', async () => {
    expect(await probeImage(await cmykJpeg())).toMatchObject({
      format: 'jpeg',
      space: 'cmyk',
      channels: 4,
      hasAlpha: false,
    });
    expect(await probeImage(await greyscaleJpeg())).toMatchObject({ format: 'jpeg', space: 'b-w', channels: 1 });
    expect(await probeImage(await png16bit())).toMatchObject({
      format: 'png',
      depth: 'ushort',
      space: 'rgb16',
      channels: 3,
    });
    const palette = await palettePngWithTrns();
    expect([...pngChunks(palette)].map((c) => c.type)).toContain('tRNS');
    expect(await probeImage(palette)).toMatchObject({
      format: 'png',
      isPalette: true,
      hasAlpha: true,
      width: 96,
      height: 96,
    });
  });

  it('images exactly at each limit', async () => {
    expect(await probeImage(await tinyPng(33, 33))).toMatchObject({ width: 33, height: 33 });
    expect(await probeImage(await widePng(9999, 40))).toMatchObject({ width: 9999, height: 40 });
    const atByteLimit = await paddedJpeg(LIMITS.maxImageBytes);
    expect(atByteLimit.length).toBe(LIMITS.maxImageBytes);
    expect(await probeImage(atByteLimit)).toMatchObject({ format: 'jpeg', width: 64, height: 64 });
    // 7071 x 7071 = 49,999,041 pixels: allowed (and judged from the header alone, see below).
    expect(await probeImage(pngBombHeader(7071, 7071))).toMatchObject({ width: 7071, height: 7071 });
  });

  it('a one-frame APNG and a one-frame animated WebP, which are still images that sharp decodes', async () => {
    const png = await apng(1);
    expect(await probeImage(png)).toMatchObject({ format: 'png', width: 64, height: 64 });
    const webp = await animatedWebp(1);
    expect([...webpChunks(webp)].map((c) => c.fourcc)).toEqual(['VP8X', 'ANIM', 'ANMF']);
    expect(await probeImage(webp)).toMatchObject({ format: 'webp', width: 64, height: 64 });
    for (const still of [png, webp]) {
      const { data } = await sharp(still, { failOn: 'error' }).raw().toBuffer({ resolveWithObject: true });
      expect([...data.subarray(0, 3)]).toEqual([0xdd, 0x22, 0x22]);
    }
  });

  it('a truncated JPEG, whose header is intact: only decoding can see the damage (see failOn below)', async () => {
    expect(await probeImage(await truncatedJpeg())).toMatchObject({ format: 'jpeg', width: 256, height: 256 });
  });
});

describe('probeImage refuses', () => {
  const cases: Array<[string, () => Buffer | Promise<Buffer>, string, RegExp]> = [
    ['empty data', () => Buffer.alloc(0), 'corrupt_image', /empty \(0 bytes\).*JPG, PNG or WebP/],
    [
      'a JPEG one byte over 22 MiB',
      oversizedJpeg,
      'file_too_large',
      /23,068,673 bytes; at most 23,068,672 bytes \(22 MiB\)/,
    ],
    ['a GIF', gif, 'unsupported_image_format', /GIF; JPG, PNG or WebP only/],
    ['a TIFF', tiff, 'unsupported_image_format', /TIFF.*JPG, PNG or WebP only/],
    ['an SVG', svg, 'unsupported_image_format', /SVG; JPG, PNG or WebP only/],
    ['an AVIF', avifOrHeif, 'unsupported_image_format', /AVIF; JPG, PNG or WebP only/],
    ['a BMP', () => bmp(), 'unsupported_image_format', /BMP; JPG, PNG or WebP only/],
    [
      'an HTML page',
      () => Buffer.from('<!DOCTYPE html><html><body>nope</body></html>'),
      'unsupported_image_format',
      /HTML/,
    ],
    [
      'plain text',
      () => Buffer.from('hello world, not an image'),
      'unsupported_image_format',
      /not a recognizable image \(it starts with bytes 68 65 6c 6c 6f 20 77 6f\); JPG, PNG or WebP only/,
    ],
    ['an animated PNG (APNG)', () => apng(2), 'animated_image', /APNG, 2 frames.*still JPG, PNG or WebP/],
    ['an animated WebP', () => animatedWebp(2), 'animated_image', /animated WebP \(2 frames\)/],
    ['an animated WebP of 3 frames', () => animatedWebp(3), 'animated_image', /animated WebP \(3 frames\)/],
    [
      'a 32x32 PNG',
      () => tinyPng(32, 32),
      'image_dimensions_out_of_range',
      /32x32 pixels; each side must be 33 to 9999 pixels/,
    ],
    [
      'a 10000x40 PNG',
      () => widePng(10000, 40),
      'image_dimensions_out_of_range',
      /10000x40 pixels; each side must be 33 to 9999/,
    ],
    [
      'a PNG bomb claiming 20000x20000',
      () => pngBombHeader(20000, 20000),
      'image_dimensions_out_of_range',
      /20000x20000/,
    ],
    [
      'a JPEG bomb claiming 20000x20000',
      () => jpegBombHeader(20000, 20000),
      'image_dimensions_out_of_range',
      /20000x20000/,
    ],
    [
      'a PNG claiming 7072x7071',
      () => pngBombHeader(7072, 7071),
      'image_too_many_pixels',
      /7072x7071 = 50,006,112 pixels; at most 50,000,000 pixels/,
    ],
    ['a JPEG claiming 9000x9000', () => jpegBombHeader(9000, 9000), 'image_too_many_pixels', /81,000,000 pixels/],
    [
      'a PNG with a wrong CRC on its first IDAT',
      () => pngWithBadCrc('first'),
      'corrupt_image',
      /"IDAT" chunk at byte \d+ has a wrong CRC; send a complete, undamaged/,
    ],
    [
      'a PNG with a wrong CRC on its last IDAT',
      () => pngWithBadCrc('last'),
      'corrupt_image',
      /"IDAT" chunk at byte \d+ has a wrong CRC/,
    ],
    [
      'a truncated PNG',
      truncatedPng,
      'corrupt_image',
      /"IDAT" chunk .* runs past the end of the data \(truncated file\)/,
    ],
    ['a truncated WebP', truncatedWebp, 'corrupt_image', /WebP is corrupt.*truncated/],
    ['a PNG signature alone', () => PNG_SIGNATURE, 'corrupt_image', /no chunks/],
    [
      'a PNG whose first chunk is not IHDR',
      () => Buffer.concat([PNG_SIGNATURE, pngChunk('IEND')]),
      'corrupt_image',
      /first chunk is "IEND", not IHDR/,
    ],
    [
      'a JPEG start followed by garbage',
      () => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(200, 7)]),
      'corrupt_image',
      /JPEG header cannot be read/,
    ],
    [
      'a RIFF/WEBP header with no image chunk',
      () => Buffer.from('RIFF\x04\x00\x00\x00WEBP', 'latin1'),
      'corrupt_image',
      /WEBP header cannot be read/,
    ],
  ];

  it.each(cases)('%s', async (_name, make, code, message) => {
    const error = await refusal(await make());
    expect({ code: error.code, status: error.status }).toEqual({ code, status: 400 });
    expect(error.message).toMatch(message);
  });

  it('checks the size before anything else: 22 MiB + 1 of GIF is too large, not a GIF', async () => {
    const bigGif = Buffer.alloc(LIMITS.maxImageBytes + 1);
    bigGif.write('GIF89a', 0, 'latin1');
    expect((await refusal(bigGif)).code).toBe('file_too_large');
  });

  it('reports animation before dimensions: a 20x20 APNG is animated_image', async () => {
    expect((await refusal(await apng(2, 20, 20))).code).toBe('animated_image');
  });
});

describe('huge headers are refused without decoding', () => {
  it('a valid 20000x20000 PNG bomb (50 KB, 1.2 GB if decoded) is refused at no noticeable memory', async () => {
    const bomb = pngBomb(20000, 20000);
    expect(bomb.length).toBeLessThan(100_000);
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 5; i++) expect((await refusal(bomb)).code).toBe('image_dimensions_out_of_range');
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
  });

  it('probes a header-only 7071x7071 PNG that cannot be decoded: the probe reads no pixels', async () => {
    const bomb = pngBombHeader(7071, 7071);
    expect(await probeImage(bomb)).toMatchObject({ width: 7071, height: 7071 });
    await expect(sharp(bomb, { limitInputPixels: false }).raw().toBuffer()).rejects.toThrow();
  });
});

describe('fixtures are what they claim', () => {
  it('the APNG holds acTL, fcTL and fdAT in order, and its second frame decodes to the second colour', async () => {
    const animation = await apng(2);
    const chunks = [...pngChunks(animation)];
    expect(chunks.map((c) => c.type)).toEqual(['IHDR', 'acTL', 'fcTL', 'IDAT', 'fcTL', 'fdAT', 'IEND']);
    expect(chunks.filter((c) => ['fcTL', 'fdAT'].includes(c.type)).map((c) => c.data.readUInt32BE(0))).toEqual([
      0, 1, 2,
    ]);
    // sharp alone would take it as a still image: the reason the probe walks the chunk list.
    expect((await sharp(animation).metadata()).pages).toBeUndefined();
    const [ihdr, , , , , fdAT] = chunks;
    const frame2 = Buffer.concat([
      PNG_SIGNATURE,
      pngChunk('IHDR', ihdr!.data),
      pngChunk('IDAT', fdAT!.data.subarray(4)),
      pngChunk('IEND'),
    ]);
    const { data } = await sharp(frame2).raw().toBuffer({ resolveWithObject: true });
    expect([...data.subarray(0, 3)]).toEqual([0x22, 0x22, 0xdd]);
  });

  it('the animated WebPs have the frames they claim', async () => {
    expect((await sharp(await animatedWebp(2)).metadata()).pages).toBe(2);
    expect((await sharp(await animatedWebp(3)).metadata()).pages).toBe(3);
  });

  it('the photo has an orange disc in the middle of a pale background', async () => {
    const { data, info } = await sharp(await jpegPhoto(320, 240))
      .raw()
      .toBuffer({ resolveWithObject: true });
    const at = (x: number, y: number) => [...data.subarray((y * info.width + x) * 3, (y * info.width + x) * 3 + 3)];
    const [r, g, b] = at(160, 120) as [number, number, number];
    expect(r).toBeGreaterThan(g + 80);
    expect(r).toBeGreaterThan(b + 120);
    const { r: br, g: bg, b: bb } = PHOTO_COLOURS.background;
    expect(at(5, 5).every((c, i) => Math.abs(c - [br, bg, bb][i]!) < 8)).toBe(true);
  });
});

describe('EXIF orientation', () => {
  const near = (pixel: number[], colour: { r: number; g: number; b: number }) =>
    Math.abs(pixel[0]! - colour.r) < 40 && Math.abs(pixel[1]! - colour.g) < 40 && Math.abs(pixel[2]! - colour.b) < 40;

  async function pixelAt(image: sharp.Sharp, x: number, y: number): Promise<number[]> {
    const { data, info } = await image.raw().toBuffer({ resolveWithObject: true });
    const at = (y * info.width + x) * info.channels;
    return [...data.subarray(at, at + 3)];
  }

  it.each([1, 2, 3, 4, 5, 6, 7, 8])(
    'orientation %i: reported, sides swapped for 5-8, upright once oriented',
    async (orientation) => {
      const [width, height] = [160, 120];
      const jpeg = await jpegWithOrientation(orientation, width, height);
      const stored = orientation >= 5 ? [height, width] : [width, height];
      expect(await probeImage(jpeg)).toMatchObject({
        orientation,
        width: stored[0],
        height: stored[1],
        orientedWidth: width,
        orientedHeight: height,
      });

      const { size, topLeft, topRight } = markerBoxes(width, height);
      const centre = (box: { left: number; top: number }) => [box.left + size / 2, box.top + size / 2] as const;
      expect(near(await pixelAt(sharp(jpeg).autoOrient(), ...centre(topLeft)), MARKER_COLOURS.topLeft)).toBe(true);
      expect(near(await pixelAt(sharp(jpeg).autoOrient(), ...centre(topRight)), MARKER_COLOURS.topRight)).toBe(true);
      expect(near(await pixelAt(sharp(jpeg).autoOrient(), width / 2, height - 5), MARKER_COLOURS.background)).toBe(
        true,
      );
      // Without the tag the picture is not upright (except for 1): the fixture really depends on it.
      const storedBoxes = markerBoxes(stored[0]!, stored[1]!);
      const storedCentre = (box: { left: number; top: number }) =>
        [box.left + storedBoxes.size / 2, box.top + storedBoxes.size / 2] as const;
      const uprightWithoutTag =
        near(await pixelAt(sharp(jpeg), ...storedCentre(storedBoxes.topLeft)), MARKER_COLOURS.topLeft) &&
        near(await pixelAt(sharp(jpeg), ...storedCentre(storedBoxes.topRight)), MARKER_COLOURS.topRight);
      expect(uprightWithoutTag).toBe(orientation === 1);
    },
  );
});

/**
 * For the decode stage: which sharp failOn level rejects damage that a header probe cannot see.
 * Findings (sharp 0.34.5, libvips 8.17): a truncated JPEG decodes silently (grey fill) with 'none' and is
 * rejected from 'truncated' up; a PNG truncated inside IDAT is rejected at every level, even 'none'; a wrong
 * CRC on an IDAT that is followed by more IDAT is rejected from 'error' up, but a wrong CRC on the last IDAT
 * is decoded at every level, even 'warning' (libspng stops reading once the pixels are complete), so the probe
 * checks every CRC itself; a truncated WebP fails at every level, already when its header is read.
 */
describe('sharp failOn levels on damaged data', () => {
  const LEVELS = ['none', 'truncated', 'error', 'warning'] as const;
  const decodes = async (input: Buffer, failOn: (typeof LEVELS)[number]) =>
    sharp(input, { failOn })
      .raw()
      .toBuffer()
      .then(
        () => true,
        () => false,
      );

  it.each([
    ['a truncated JPEG', truncatedJpeg, { none: true, truncated: false, error: false, warning: false }],
    ['a truncated PNG', truncatedPng, { none: false, truncated: false, error: false, warning: false }],
    [
      'a PNG with a wrong CRC on its first IDAT',
      () => pngWithBadCrc('first'),
      { none: true, truncated: true, error: false, warning: false },
    ],
    [
      'a PNG with a wrong CRC on its last IDAT',
      () => pngWithBadCrc('last'),
      { none: true, truncated: true, error: true, warning: true },
    ],
    ['a truncated WebP', truncatedWebp, { none: false, truncated: false, error: false, warning: false }],
  ] as const)('%s', async (_name, make, expected) => {
    const input = await make();
    const results: Record<string, boolean> = {};
    for (const level of LEVELS) results[level] = await decodes(input, level);
    expect(results).toEqual(expected);
  });
});

describe('a decoder complaint in an error message', () => {
  // libvips on a machine with more threads repeats its warning once per line (seen on CI:
  // "VipsJpeg: premature end of JPEG image\nVipsJpeg: premature end of JPEG image").
  it('is its first line, so the error stays one line on stderr and in JSON lines', () => {
    const repeated = new Error('VipsJpeg: premature end of JPEG image\nVipsJpeg: premature end of JPEG image\n');
    expect(decoderReason(repeated)).toBe('VipsJpeg: premature end of JPEG image');
    expect(decoderReason(new Error('\n  heif: bad box\n'))).toBe('heif: bad box');
    expect(decoderReason('')).toBe('no reason given');
  });
});
