// Colour and metadata of `rmbg remove --local` results, read back as a viewer would:
// - a Display P3-tagged photo comes out as untagged sRGB with the colours of the sRGB picture it was made from
//   (not its stored P3 numbers);
// - by default a result carries no metadata; --keep-metadata keeps artist, copyright and dates (in PNG, JPG and
//   WebP), never the GPS position, which --keep-gps adds; the orientation tag is never kept (results are upright).
// The model is a generated one that keeps every pixel (alpha 255), so colours can be compared exactly and fast.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import exifReader from 'exif-reader';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegWithOrientation } from '../helpers/exif-images.js';
import { writeRedChannelModel } from '../helpers/onnx-writer.js';
import { colourGradient } from '../helpers/photo-formats.js';
import { ensureBuilt, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';

let work: string;
const WIDTH = 64;
const HEIGHT = 48;
/** The sRGB picture the P3 file is made from. */
const srgbPixels = colourGradient(WIDTH, HEIGHT);

const EXIF = {
  IFD0: {
    Artist: 'Ada Lovelace',
    Copyright: '(c) Ada Lovelace 2026',
    DateTime: '2026:01:02 03:04:05',
    Make: 'Canon',
    Model: 'EOS R5',
  },
  IFD2: { DateTimeOriginal: '2026:01:02 03:04:05' },
  IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 30/1', GPSLongitudeRef: 'E', GPSLongitude: '2/1 21/1 8/1' },
};

const env = () => ({
  env: { RMBG_DATA_DIR: path.join(work, 'data'), XDG_CACHE_HOME: path.join(work, 'cache') },
  cwd: work,
});
const removeLocal = (input: string, out: string, ...flags: string[]) =>
  rmbg(['remove', input, '--local', '--model', 'keep-all', '-o', out, '--overwrite', '--json', ...flags], env());

beforeAll(async () => {
  ensureBuilt();
  work = tempDir();
  // mask = (red/255 − 0.5) + 2 ≥ 1.5 everywhere: alpha 255, every colour kept as decoded.
  writeRedChannelModel(path.join(work, 'keep-all.onnx'), { width: 1024, height: 1024, bias: 2 });
  const added = await rmbg(['models', 'add', 'keep-all', 'keep-all.onnx', '--preset', 'isnet'], env());
  if (added.exitCode !== 0) throw new Error(added.stderr);
  // sharp converts the sRGB pixels into Display P3 numbers and tags the file with the P3 profile.
  writeFileSync(
    path.join(work, 'p3.jpg'),
    await sharp(srgbPixels, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } })
      .jpeg({ quality: 100, chromaSubsampling: '4:4:4' })
      .withIccProfile('p3')
      .toBuffer(),
  );
  writeFileSync(
    path.join(work, 'tagged.jpg'),
    await sharp({ create: { width: 80, height: 60, channels: 3, background: '#886644' } })
      .jpeg()
      .withExif(EXIF)
      .toBuffer(),
  );
  writeFileSync(path.join(work, 'turned.jpg'), await jpegWithOrientation(6, 80, 60));
});

afterAll(removeTempDirs);

describe('colour: an ICC-tagged photo comes out as sRGB', () => {
  it('a Display P3 JPEG gives the sRGB colours it was made from, in an untagged PNG', async () => {
    const stored = await sharp(path.join(work, 'p3.jpg'), { ignoreIcc: true }).raw().toBuffer();
    const storedDiff = Math.max(...stored.map((v, i) => Math.abs(v - (srgbPixels[i] as number))));
    expect(storedDiff).toBeGreaterThan(30); // the file's own numbers are P3's, far from sRGB

    const result = await removeLocal('p3.jpg', 'out-p3', '--format', 'png');
    expect(result.exitCode).toBe(0);
    const out = path.join(work, 'out-p3', 'p3.png');
    const meta = await sharp(out).metadata();
    expect(meta.icc).toBeUndefined(); // untagged: every viewer reads it as sRGB
    const { data, info } = await sharp(out, { ignoreIcc: true }).raw().toBuffer({ resolveWithObject: true });
    expect(info).toMatchObject({ width: WIDTH, height: HEIGHT, channels: 4 });
    // The file's own sRGB conversion (libvips, honouring its profile), and the sRGB picture it was made from.
    const converted = await sharp(path.join(work, 'p3.jpg')).toColourspace('srgb').raw().toBuffer();
    let fromConversion = 0;
    let fromOriginal = 0;
    for (let p = 0; p < WIDTH * HEIGHT; p++) {
      for (let c = 0; c < 3; c++) {
        fromConversion = Math.max(
          fromConversion,
          Math.abs((data[p * 4 + c] as number) - (converted[p * 3 + c] as number)),
        );
        fromOriginal = Math.max(
          fromOriginal,
          Math.abs((data[p * 4 + c] as number) - (srgbPixels[p * 3 + c] as number)),
        );
      }
      expect(data[p * 4 + 3]).toBe(255);
    }
    expect(fromConversion).toBeLessThanOrEqual(1);
    // JPEG q100 4:4:4 and two profile conversions each round: a few levels, far below the P3 numbers' distance.
    expect(fromOriginal).toBeLessThanOrEqual(8);
  });
});

describe('metadata: none by default; --keep-metadata keeps authorship and dates; GPS only with --keep-gps', () => {
  const exifOf = async (file: string) => {
    const { exif } = await sharp(file).metadata();
    return exif ? exifReader(exif) : undefined;
  };

  it('by default the result carries no EXIF', async () => {
    const result = await removeLocal('tagged.jpg', 'out-plain', '--format', 'png');
    expect(result.exitCode).toBe(0);
    expect(await exifOf(path.join(work, 'out-plain', 'tagged.png'))).toBeUndefined();
  });

  it.each(['png', 'jpg', 'webp'])(
    '--keep-metadata, %s: artist, copyright and dates, no GPS, no camera',
    async (format) => {
      const result = await removeLocal('tagged.jpg', `out-keep-${format}`, '--format', format, '--keep-metadata');
      expect(result.exitCode).toBe(0);
      const out = path.join(work, `out-keep-${format}`, `tagged.${format}`);
      expect(await sharp(readFileSync(out)).metadata()).toMatchObject({
        width: 80,
        height: 60,
        format: format === 'jpg' ? 'jpeg' : format,
      });
      const exif = await exifOf(out);
      expect(exif?.Image).toMatchObject({
        Artist: 'Ada Lovelace',
        Copyright: '(c) Ada Lovelace 2026',
        DateTime: new Date('2026-01-02T03:04:05Z'),
      });
      expect(exif?.Photo).toMatchObject({ DateTimeOriginal: new Date('2026-01-02T03:04:05Z') });
      expect(exif?.Image?.Make).toBeUndefined();
      expect(exif?.Image?.Model).toBeUndefined();
      expect(exif?.GPSInfo).toBeUndefined();
    },
  );

  it('--keep-gps adds the GPS position', async () => {
    const result = await removeLocal('tagged.jpg', 'out-gps', '--format', 'png', '--keep-gps');
    expect(result.exitCode).toBe(0);
    const exif = await exifOf(path.join(work, 'out-gps', 'tagged.png'));
    expect(exif?.GPSInfo).toMatchObject({
      GPSLatitudeRef: 'N',
      GPSLatitude: [48, 51, 30],
      GPSLongitudeRef: 'E',
      GPSLongitude: [2, 21, 8],
    });
    expect(exif?.Image).toMatchObject({ Artist: 'Ada Lovelace' });
  });

  it('an EXIF-rotated photo comes out upright and without an orientation tag, even with --keep-metadata', async () => {
    const result = await removeLocal('turned.jpg', 'out-turned', '--format', 'png', '--keep-metadata');
    expect(result.exitCode).toBe(0);
    const meta = await sharp(path.join(work, 'out-turned', 'turned.png')).metadata();
    expect(meta).toMatchObject({ width: 80, height: 60 });
    expect(meta.orientation).toBeUndefined();
  });
});
