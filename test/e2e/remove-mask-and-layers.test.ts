// `rmbg remove --local` for a photographer: the mask file (--mask, --mask-only), a layered PSD and a TIFF with an
// unassociated alpha, at the photo's depth. The warm-key model (helpers/fast-models.ts) on 1024×1024 photos, its
// own input size: the photo reaches it unresized, so the mask is known from the photo's pixels, (red − blue − 32) / 32.
// The PSD is read by Debian's ImageMagick and psd-tools, not only by the code that wrote it.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, jsonLines, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { warmKeyModel } from '../helpers/fast-models.js';
import { writeTree } from '../helpers/remove-local-files.js';

const SIDE = 1024;
let work: string;
let env: Record<string, string>;
let model: string;
/** The 8-bit photo's RGB bytes, and the warm-key model's mask of it, one byte per pixel. */
let photo: Buffer;
let truth: Buffer;

/** An orange disc with a soft edge on a blue-grey ground, 8-bit RGB. */
async function discPhoto(): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${SIDE}" height="${SIDE}">
    <defs><radialGradient id="g"><stop offset="0.8" stop-color="rgb(255,128,0)"/><stop offset="1" stop-color="rgb(60,80,90)"/></radialGradient></defs>
    <rect width="100%" height="100%" fill="rgb(60,80,90)"/><circle cx="500" cy="520" r="300" fill="url(#g)"/></svg>`;
  return sharp(Buffer.from(svg)).removeAlpha().raw().toBuffer();
}

const raw8 = { width: SIDE, height: SIDE, channels: 3 } as const;

function warmKeyMask(rgb: Buffer): Buffer {
  const mask = Buffer.alloc(SIDE * SIDE);
  for (let i = 0; i < mask.length; i++) {
    const v = ((rgb[i * 3] as number) - (rgb[i * 3 + 2] as number) - 32) / 32;
    mask[i] = v <= 0 ? 0 : v >= 1 ? 255 : v * 255 + 0.5;
  }
  return mask;
}

/** A grayscale PNG's values (sharp reads it as sRGB unless told). */
const grey8 = (file: string) => sharp(file).toColourspace('b-w').raw().toBuffer();

const u16 = (b: Buffer) => new Uint16Array(b.buffer, b.byteOffset, b.length / 2);

/** The largest difference between two planes of numbers. */
function maxDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs((a[i] as number) - (b[i] as number)));
  return worst;
}

const run = (args: string[]) =>
  rmbg(['remove', '--local', '--json', '--model', model, '-o', 'out', ...args], { cwd: work, env });

beforeAll(async () => {
  ensureBuilt();
  work = tempDir();
  model = warmKeyModel();
  env = { RMBG_DATA_DIR: path.join(work, 'data'), XDG_CACHE_HOME: path.join(work, 'cache') };
  const rgb = await discPhoto();
  photo = rgb;
  truth = warmKeyMask(rgb);
  const wide = new Uint16Array(rgb.length);
  for (let i = 0; i < rgb.length; i++) wide[i] = (rgb[i] as number) * 257;
  writeTree(work, {
    'shoot/photo.png': await sharp(rgb, { raw: raw8 }).png().toBuffer(),
    // 16 bits, the same picture (each value ×257), tagged Display P3.
    'deep/deep.png': await sharp(wide, { raw: raw8 }).toColourspace('rgb16').withIccProfile('p3').png().toBuffer(),
    // A 16-bit TIFF (sharp's default JPEG compression would make it 8-bit): the engine decodes it to 8 bits, the
    // mask is made from its own bytes.
    'tiff16/scan.tif': await sharp(wide, { raw: raw8 }).toColourspace('rgb16').tiff({ compression: 'lzw' }).toBuffer(),
  });
}, 60_000);

afterAll(removeTempDirs);

describe('--mask', () => {
  it('writes photo.mask.png beside photo.png: the photo’s alpha at its full size, 8 bits for an 8-bit photo', async () => {
    const result = await run(['shoot', '--mask']);
    expect(result.exitCode, result.stderr).toBe(0);
    const [line] = jsonLines(result.stdout);
    const mask = path.join(work, 'out/photo.mask.png');
    expect(line).toMatchObject({ output: path.join(work, 'out/photo.png'), mask, status: 'done' });
    expect(await sharp(mask).metadata()).toMatchObject({ width: SIDE, height: SIDE, channels: 1, depth: 'uchar' });
    const data = await grey8(mask);
    expect(maxDifference(data, truth)).toBeLessThanOrEqual(1);
    // The cutout's alpha is the same mask.
    const cutoutAlpha = await sharp(path.join(work, 'out/photo.png')).extractChannel(3).raw().toBuffer();
    expect(maxDifference(cutoutAlpha, data)).toBe(0);
  });

  it('a re-run skips the finished photo, and makes again only a mask deleted by hand', async () => {
    const cutout = path.join(work, 'out/photo.png');
    const cutoutTime = statSync(cutout).mtimeMs;
    const skipped = await run(['shoot', '--mask']);
    expect(jsonLines(skipped.stdout)[0]).toMatchObject({ status: 'skipped', reason: 'exists' });

    const mask = path.join(work, 'out/photo.mask.png');
    const before = readFileSync(mask);
    rmSync(mask);
    const redone = await run(['shoot', '--mask']);
    expect(redone.exitCode, redone.stderr).toBe(0);
    expect(jsonLines(redone.stdout)[0]).toMatchObject({ status: 'done', mask });
    expect(readFileSync(mask).equals(before)).toBe(true);
    expect(statSync(cutout).mtimeMs, 'the cutout in place is not written again').toBe(cutoutTime);
  });

  it('--mask-only writes the mask alone, 16 bits for a 16-bit photo', async () => {
    const result = await run(['deep', '--mask-only', '-o', 'masks']);
    expect(result.exitCode, result.stderr).toBe(0);
    const mask = path.join(work, 'masks/deep.mask.png');
    expect(jsonLines(result.stdout)[0]).toMatchObject({ output: mask, mask, status: 'done' });
    expect(existsSync(path.join(work, 'masks/deep.png')), 'no cutout').toBe(false);
    expect((await sharp(mask).metadata()).depth).toBe('ushort');
    const data = await sharp(mask).toColourspace('grey16').raw({ depth: 'ushort' }).toBuffer();
    expect(maxDifference(u16(data), widened(truth))).toBeLessThanOrEqual(257);
  });
});

describe('a 16-bit TIFF photo', () => {
  it('gives a 16-bit mask, as a 16-bit PNG does', async () => {
    const result = await run(['tiff16', '--mask-only', '-o', 'tiff-masks']);
    expect(result.exitCode, result.stderr).toBe(0);
    const mask = path.join(work, 'tiff-masks/scan.mask.png');
    expect(await sharp(mask).metadata()).toMatchObject({ depth: 'ushort', channels: 1, width: SIDE });
    const data = await sharp(mask).toColourspace('grey16').raw({ depth: 'ushort' }).toBuffer();
    expect(maxDifference(u16(data), widened(truth))).toBeLessThanOrEqual(257);
  });
});

function widened(bytes: Buffer): Uint16Array {
  return Uint16Array.from(bytes, (v) => v * 257);
}

describe('--format tiff', () => {
  it('keeps a 16-bit photo’s depth, pixels and ICC profile, with the mask as an unassociated alpha', async () => {
    const result = await run(['deep', '--format', 'tiff', '-o', 'tiffs']);
    expect(result.exitCode, result.stderr).toBe(0);
    const tiff = path.join(work, 'tiffs/deep.tif');
    expect(jsonLines(result.stdout)[0]).toMatchObject({ output: tiff, status: 'done', width: SIDE, height: SIDE });
    const info = execFileSync('tiffinfo', [tiff], { encoding: 'utf8' });
    expect(info).toMatch(/Bits\/Sample: 16/);
    expect(info).toMatch(/Extra Samples: 1<unassoc-alpha>/);
    const source = path.join(work, 'deep/deep.png');
    expect((await sharp(tiff).metadata()).icc).toEqual((await sharp(source).metadata()).icc);
    const pixels = u16(await sharp(tiff).keepIccProfile().toColourspace('rgb16').raw({ depth: 'ushort' }).toBuffer());
    const photo = u16(await sharp(source).keepIccProfile().toColourspace('rgb16').raw({ depth: 'ushort' }).toBuffer());
    const alpha = pixels.filter((_, i) => i % 4 === 3);
    expect(maxDifference(alpha, widened(truth))).toBeLessThanOrEqual(257);
    expect(
      maxDifference(
        pixels.filter((_, i) => i % 4 !== 3),
        photo,
      ),
      'the photo’s own pixels',
    ).toBe(0);
  });
});

/** Debian's ImageMagick (6 on bookworm, 7 on trixie) by its own name: another `convert` may come first on PATH. */
const CONVERT =
  ['convert-im6.q16', 'convert-im7.q16', 'magick'].map((name) => `/usr/bin/${name}`).find((file) => existsSync(file)) ??
  'convert';

describe('--format psd', () => {
  it('a layer whose layer mask is the mask file, over a background layer, as ImageMagick and psd-tools read it', async () => {
    const result = await run(['shoot', '--format', 'psd', '--bg-color', '81d4fa', '--mask', '-o', 'psds']);
    expect(result.exitCode, result.stderr).toBe(0);
    const psd = path.join(work, 'psds/photo.psd');
    expect(jsonLines(result.stdout)[0]).toMatchObject({ output: psd, status: 'done' });
    const frames = execFileSync('identify', [psd], { encoding: 'utf8' }).trim().split('\n');
    expect(frames, 'the composite and two layers').toHaveLength(3);
    const mask = await grey8(path.join(work, 'psds/photo.mask.png'));
    // ImageMagick applies a layer's mask to its alpha: the photo layer's alpha is the mask.
    const layerAlpha = execFileSync(CONVERT, [`${psd}[2]`, '-alpha', 'extract', '-depth', '8', 'gray:-'], {
      maxBuffer: 64 << 20,
    });
    expect(maxDifference(layerAlpha, mask)).toBe(0);
    const layers = execFileSync(
      '/usr/bin/python3',
      [
        '-c',
        `from psd_tools import PSDImage
p = PSDImage.open(${JSON.stringify(psd)})
for layer in p: print(layer.name, layer.has_mask(), layer.mask.size if layer.has_mask() else '')`,
      ],
      { encoding: 'utf8' },
    );
    expect(layers.trim().split('\n')).toEqual(['Background colour False ', `Photo True (${SIDE}, ${SIDE})`]);
    // The composite (ImageMagick's first image): the photo where the mask is 255, the colour where it is 0.
    const flat = execFileSync(CONVERT, [`${psd}[0]`, '-depth', '8', 'rgb:-'], { maxBuffer: 64 << 20 });
    const at = (pixels: Buffer, i: number) => [...pixels.subarray(i * 3, i * 3 + 3)];
    const subject = truth.lastIndexOf(255);
    expect(at(flat, subject)).toEqual(at(photo, subject));
    expect(at(flat, truth.indexOf(0))).toEqual([0x81, 0xd4, 0xfa]);
  });

  it('keeps the photo’s ICC profile as the PSD’s ICC resource', async () => {
    const result = await run(['deep', '--format', 'psd', '-o', 'psd-p3']);
    expect(result.exitCode, result.stderr).toBe(0);
    const psd = path.join(work, 'psd-p3/deep.psd');
    const icc = execFileSync('/usr/bin/python3', [
      '-c',
      `import sys
from psd_tools import PSDImage
from psd_tools.constants import Resource
sys.stdout.buffer.write(PSDImage.open(${JSON.stringify(psd)}).image_resources.get_data(Resource.ICC_PROFILE))`,
    ]);
    expect(icc.equals((await sharp(path.join(work, 'deep/deep.png')).metadata()).icc as Buffer)).toBe(true);
  });
});

describe('through a server', () => {
  it.each([
    [['--format', 'psd'], /format=psd/],
    [['--mask'], /mask file/],
  ])('%j is refused before anything is sent: local only, exit 2', async (flags, named) => {
    const result = await rmbg(['remove', 'shoot', ...flags, '--api-url', 'http://127.0.0.1:9', '--api-key', 'k'], {
      cwd: work,
      env,
    });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(named);
    expect(result.stderr).toMatch(/local only/);
  });
});
