// Photos as people have them: a folder of JPG, PNG, WebP, HEIC (one turned by its irot box with the EXIF tag
// beside it, as an iPhone writes it), AVIF and TIFF (one turned by its orientation tag) is cut out by the real CLI
// on this computer (the turned HEIC from stdin too) and through a real `rmbg serve`, which itself keeps refusing
// what the API does not take. A truncated HEIC, a two-page TIFF and a HEIC whose header claims 81 MP fail alone,
// with clear messages; --dry-run names the conversions; --keep-metadata keeps a HEIC's artist; a Display P3 HEIC
// keeps its colours; a run over JPGs never loads the HEIC decoder.
// Models: the quick model (the red channel: the white picture and its red marker kept, the blue marker removed),
// and for colours one that keeps every pixel.

import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import exifReader from 'exif-reader';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegWithOrientation, markerBoxes } from '../helpers/exif-images.js';
import { writeRedChannelModel } from '../helpers/onnx-writer.js';
import {
  colourGradient,
  heicFromJpeg,
  multiPageTiff,
  withClaimedSize,
  withRotation,
} from '../helpers/photo-formats.js';
import { ensureBuilt, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { importRecorder, packagesIn } from '../helpers/import-recorder.js';
import { addQuickModel, QUICK_MODEL, writeTree } from '../helpers/remove-local-files.js';
import { jsonLines, LONG, PRICE, startRemoteServer, type RemoteServer } from '../helpers/remove-remote-harness.js';
import { call, errorCode } from '../helpers/serve-harness.js';

const WIDTH = 160;
const HEIGHT = 120;
let work: string;
let quick: Record<string, string>;
let server: RemoteServer;
let photos: Record<string, Buffer>;

beforeAll(async () => {
  ensureBuilt();
  work = tempDir();
  const upright = await jpegWithOrientation(1, WIDTH, HEIGHT);
  // Stored turned (height × width) with EXIF orientation 6; the HEIC made of it gets the matching irot box.
  const turned = await jpegWithOrientation(6, WIDTH, HEIGHT);
  photos = {
    'a.jpg': upright,
    'b.png': await sharp(upright).png().toBuffer(),
    'c.webp': await sharp(upright).webp({ quality: 95 }).toBuffer(),
    'd.heic': heicFromJpeg(upright, work, 'd'),
    'IMG_0001.HEIC': withRotation(heicFromJpeg(turned, work, 'turned'), 3), // 3 quarter turns anticlockwise
    'f.avif': await sharp(upright).avif({ quality: 90 }).toBuffer(),
    'g.tiff': await sharp(upright).tiff().toBuffer(),
    'h.tif': await sharp(turned).withMetadata().tiff().toBuffer(), // stored turned, orientation tag 6
  };
  writeTree(path.join(work, 'photos'), photos);
  const d = photos['d.heic'] as Buffer;
  const tiff = photos['g.tiff'] as Buffer;
  writeTree(path.join(work, 'bad'), {
    'ok.jpg': upright,
    'cut.heic': d.subarray(0, Math.floor(d.length * 0.6)),
    'two.tif': multiPageTiff([tiff, tiff], work, 'two'),
    'bomb.heic': withClaimedSize(d, 9000, 9000),
    'small.heic': withClaimedSize(d, WIDTH / 2, HEIGHT / 2), // libheif-js prints on stdout when it fails
  });
  writeTree(path.join(work, 'jpgs'), { 'a.jpg': upright });
  quick = await addQuickModel(path.join(work, 'data'));
  server = await startRemoteServer([], 'quick');
}, LONG);

afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

const removeLocal = (input: string, output: string, nodeArgs: string[] = []) =>
  rmbg(['remove', input, '--local', ...QUICK_MODEL, '-o', output, '--json'], { cwd: work, env: quick, nodeArgs });

const removeThroughServer = (input: string, output: string, key: string, ...flags: string[]) =>
  rmbg(['remove', input, '-o', output, '--api-url', server.url, '--api-key', key, '--json', ...flags], {
    cwd: work,
    configDir: path.join(work, 'client-config'),
  });

/** The cut-out of the upright picture: its size, the red marker top left kept, the blue one top right removed. */
async function expectUprightCutout(file: string): Promise<void> {
  const { data, info } = await sharp(file).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  expect({ file, width: info.width, height: info.height }).toEqual({ file, width: WIDTH, height: HEIGHT });
  const { size, topRight } = markerBoxes(WIDTH, HEIGHT);
  const pixel = (x: number, y: number) => [...data.subarray((y * WIDTH + x) * 4, (y * WIDTH + x) * 4 + 4)];
  const [r, g, b, alpha] = pixel(size / 2, size / 2);
  expect({ file, red: r! > 200 && g! < 60 && b! < 60, opaque: alpha! > 200 }).toEqual({
    file,
    red: true,
    opaque: true,
  });
  expect({ file, topRightAlpha: pixel(topRight.left + size / 2, size / 2)[3] }).toEqual({ file, topRightAlpha: 0 });
}

const OUTPUTS = ['a.png', 'b.png', 'c.png', 'd.png', 'IMG_0001.png', 'f.png', 'g.png', 'h.png'];

describe('a folder of JPG, PNG, WebP, HEIC, AVIF and TIFF', () => {
  it('is cut out on this computer: each output upright, of its size, named after its photo', async () => {
    const recorder = importRecorder();
    const result = await removeLocal('photos', 'out-local', recorder.nodeArgs);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(jsonLines(result.stdout).summary).toMatchObject({ done: 8, failed: 0 });
    expect(
      readdirSync(path.join(work, 'out-local'))
        .filter((name) => !name.startsWith('.') && name !== 'review.html')
        .sort(),
    ).toEqual([...OUTPUTS].sort());
    for (const name of OUTPUTS) await expectUprightCutout(path.join(work, 'out-local', name));
    expect(packagesIn(recorder.loaded()).has('heic-decode')).toBe(true); // the recorder sees it when it loads
  });

  it('is cut out through rmbg serve, converted on this computer; a re-run sends the same keys and pays nothing', async () => {
    const key = await server.account(100);
    const first = await removeThroughServer('photos', 'out-remote', key);
    expect(first.exitCode, first.stderr).toBe(0);
    expect(jsonLines(first.stdout).summary).toMatchObject({ done: 8, failed: 0, credits: 8 * PRICE });
    for (const name of OUTPUTS) await expectUprightCutout(path.join(work, 'out-remote', name));
    expect(await server.total(key)).toBe(100 - 8 * PRICE);

    const again = await removeThroughServer('photos', 'out-remote', key, '--overwrite');
    expect(again.exitCode, again.stderr).toBe(0);
    const { files } = jsonLines(again.stdout);
    // The same photos give the same keys: the server replays every result instead of charging again.
    expect(files.map((file) => [path.basename(file.input), file.replayed]).sort()).toEqual(
      Object.keys(photos)
        .map((name) => [name, true])
        .sort(),
    );
    expect(await server.total(key)).toBe(100 - 8 * PRICE);
  });

  it('rmbg serve itself keeps refusing a HEIC, as any format the API does not take', async () => {
    const key = await server.account(10);
    const form = new FormData();
    form.append('image_file', new Blob([new Uint8Array(photos['d.heic'] as Buffer)]), 'd.heic');
    const answer = await call(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: { 'X-API-Key': key },
      body: form,
    });
    expect(answer.status).toBe(400);
    expect(errorCode(answer)).toBe('unsupported_image_format');
    expect(await server.total(key)).toBe(10);
  });

  it('--dry-run through a server names each photo that will be converted, and converts nothing', async () => {
    const key = await server.account(10);
    const dry = await rmbg(
      ['remove', 'photos', '-o', 'out-dry', '--api-url', server.url, '--api-key', key, '--dry-run'],
      { cwd: work, configDir: path.join(work, 'client-config') },
    );
    expect(dry.exitCode, dry.stderr).toBe(0);
    const lineOf = (name: string) =>
      dry.stdout.split('\n').find((line) => line.startsWith(`would send ${path.join(work, 'photos', name)}`));
    const converted = (format: string) =>
      ` (${format}: converted on this computer to PNG, or to JPEG if the PNG is over 22 MiB)`;
    for (const name of ['a.jpg', 'b.png', 'c.webp'])
      expect(lineOf(name)).toBe(`would send ${path.join(work, 'photos', name)}`);
    for (const [name, format] of [
      ['d.heic', 'HEIC'],
      ['IMG_0001.HEIC', 'HEIC'],
      ['f.avif', 'AVIF'],
      ['g.tiff', 'TIFF'],
      ['h.tif', 'TIFF'],
    ] as const)
      expect(lineOf(name)).toBe(`would send ${path.join(work, 'photos', name)}${converted(format)}`);
    expect(await server.total(key)).toBe(10);
  });
});

describe('stdin', () => {
  it('a turned HEIC on stdin comes out on stdout as an upright cut-out', async () => {
    const result = await rmbg(['remove', '-', '--local', '--format', 'png', ...QUICK_MODEL], {
      env: quick,
      input: photos['IMG_0001.HEIC'],
      encoding: 'buffer',
    });
    expect(result.exitCode, Buffer.from(result.stderr).toString()).toBe(0);
    writeTree(path.join(work, 'from-stdin'), { 'out.png': Buffer.from(result.stdout) });
    await expectUprightCutout(path.join(work, 'from-stdin', 'out.png'));
  });
});

describe('bad photos fail alone', () => {
  it('a truncated HEIC, a two-page TIFF, a HEIC claiming 81 MP and one claiming less than it holds fail with clear messages, and --json stays JSON; the JPG is cut out', async () => {
    const result = await removeLocal('bad', 'out-bad');
    expect(result.exitCode).toBe(1);
    // --json's stdout is rmbg's alone: every line a JSON object, whatever a library in a worker prints.
    expect(
      result.stdout
        .trim()
        .split('\n')
        .filter((line) => !line.startsWith('{')),
    ).toEqual([]);
    const { files, summary } = jsonLines(result.stdout);
    expect(summary).toMatchObject({ done: 1, failed: 4 });
    const byName = new Map(files.map((file) => [path.basename(file.input), file]));
    expect(byName.get('ok.jpg')?.status).toBe('done');
    expect(byName.get('cut.heic')?.error).toMatchObject({
      code: 'corrupt_image',
      message: expect.stringMatching(/^the HEIC image cannot be decoded: it is truncated or corrupt \(/),
    });
    expect(byName.get('two.tif')?.error).toEqual({
      code: 'unsupported_image_format',
      message: 'the TIFF holds 2 pages; rmbg takes a single-page TIFF: save the page you want as its own file',
    });
    expect(byName.get('small.heic')?.error).toMatchObject({
      code: 'corrupt_image',
      message: expect.stringMatching(/^the HEIC image cannot be decoded: it is truncated or corrupt \(/),
    });
    // Refused from the header: its 81 million pixels are never decoded.
    expect(byName.get('bomb.heic')?.error).toEqual({
      code: 'image_too_many_pixels',
      message: 'the image is 9000x9000 = 81,000,000 pixels; at most 50,000,000 pixels (50 MP) are allowed',
    });
  });
});

describe('--keep-metadata', () => {
  it('keeps a HEIC’s artist, and not its position, as for a JPG', async () => {
    const tagged = await sharp({ create: { width: WIDTH, height: HEIGHT, channels: 3, background: '#ffffff' } })
      .jpeg()
      .withExif({
        IFD0: { Artist: 'Ada Lovelace', DateTime: '2026:01:02 03:04:05' },
        IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 30/1' },
      })
      .toBuffer();
    writeTree(path.join(work, 'tagged'), { 'IMG_0002.heic': heicFromJpeg(tagged, work, 'tagged') });
    const result = await rmbg(
      ['remove', 'tagged', '--local', ...QUICK_MODEL, '-o', 'out-tagged', '--format', 'png', '--keep-metadata'],
      { cwd: work, env: quick },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const { exif } = await sharp(path.join(work, 'out-tagged', 'IMG_0002.png')).metadata();
    const kept = exifReader(exif as Buffer);
    expect(kept.Image?.Artist).toBe('Ada Lovelace');
    expect(kept.GPSInfo).toBeUndefined();
  });
});

describe('a run over JPGs alone', () => {
  it('never loads the HEIC decoder', async () => {
    const recorder = importRecorder();
    const result = await removeLocal('jpgs', 'out-jpgs', recorder.nodeArgs);
    expect(result.exitCode, result.stderr).toBe(0);
    const packages = packagesIn(recorder.loaded());
    expect(packages.has('sharp')).toBe(true);
    expect(packages.has('heic-decode')).toBe(false);
    expect(packages.has('libheif-js')).toBe(false);
  });
});

describe('colour: a Display P3 HEIC', () => {
  const SIDE_W = 64;
  const SIDE_H = 48;
  /** The sRGB picture both P3 files are made of. */
  const srgbPixels = colourGradient(SIDE_W, SIDE_H);

  it('keeps its colours: its cut-out is within 2 levels (mean) of the same P3 JPG’s', async () => {
    const dir = path.join(work, 'p3');
    const env = { RMBG_DATA_DIR: path.join(dir, 'data'), XDG_CACHE_HOME: path.join(dir, 'cache') };
    mkdirSync(dir);
    // mask = (red/255 − 0.5) + 2 ≥ 1.5 everywhere: alpha 255, every colour kept as decoded.
    writeRedChannelModel(path.join(dir, 'keep-all.onnx'), { width: 1024, height: 1024, bias: 2 });
    const added = await rmbg(['models', 'add', 'keep-all', 'keep-all.onnx', '--preset', 'isnet'], { cwd: dir, env });
    expect(added.exitCode, added.stderr).toBe(0);
    // sharp turns the sRGB pixels into Display P3 numbers and tags the JPG; heif-enc carries the profile over.
    const p3Jpeg = await sharp(srgbPixels, { raw: { width: SIDE_W, height: SIDE_H, channels: 3 } })
      .jpeg({ quality: 100, chromaSubsampling: '4:4:4' })
      .withIccProfile('p3')
      .toBuffer();
    writeTree(path.join(dir, 'in'), { 'p3.jpg': p3Jpeg, 'p3.heic': heicFromJpeg(p3Jpeg, dir, 'p3', 95) });
    expect((await sharp(path.join(dir, 'in', 'p3.heic')).metadata()).icc).toBeDefined();

    const result = await rmbg(['remove', 'in', '--local', '--model', 'keep-all', '-o', 'out', '--format', 'png'], {
      cwd: dir,
      env,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const pixelsOf = (name: string) =>
      sharp(path.join(dir, 'out', name))
        .raw()
        .toBuffer();
    const [fromJpeg, fromHeic] = await Promise.all([pixelsOf('p3.jpg.png'), pixelsOf('p3.heic.png')]);
    const meanError = (a: Buffer, b: Buffer) =>
      a.reduce((sum, v, i) => sum + Math.abs(v - (b[i] as number)), 0) / a.length;
    expect(fromHeic.length).toBe(fromJpeg.length);
    expect(meanError(fromHeic, fromJpeg)).toBeLessThanOrEqual(2);
    // The stored numbers are P3's: read as sRGB (the profile ignored), they would be off by more than that.
    const storedAsSrgb = await sharp(readFileSync(path.join(dir, 'in', 'p3.jpg')), { ignoreIcc: true })
      .ensureAlpha()
      .raw()
      .toBuffer();
    expect(meanError(storedAsSrgb, fromJpeg)).toBeGreaterThan(2);
  });
});
