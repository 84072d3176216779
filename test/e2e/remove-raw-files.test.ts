// A photographer's folder: camera RAWs of four kinds (DNG, CR2, NEF, ARW; test/helpers/raw-files.ts, which LibRaw's
// own tools read), a RAW+JPEG pair of one shot and sidecars. Each RAW is cut out at its full size, upright by its
// Orientation tag, from the camera's preview or from LibRaw's development (`--raw`); the pair gives one output
// (`--raw-pairs`), or two named apart; the summary and --dry-run say what was passed over; a file rmbg does not
// read says what this mode reads; through a server a RAW is converted on this computer before upload.
// Model: the quick model (red over 215 kept): the RAW's red marker opaque, its blue-grey background transparent.

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import exifReader from 'exif-reader';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PHOTO_FORMATS_TEXT } from '../../src/api/media-types.js';
import { ensureBuilt, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { RAW_EXIF, rawFiles, rawPicture } from '../helpers/raw-files.js';
import { addQuickModel, QUICK_MODEL, writeTree } from '../helpers/remove-local-files.js';
import { jsonLines, LONG, PRICE, startRemoteServer, type RemoteServer } from '../helpers/remove-remote-harness.js';

/** The upright picture's size: the RAWs store it turned (96 × 64, Orientation 6). */
const WIDTH = 64;
const HEIGHT = 96;
const RAW_OUTPUTS = ['IMG_ARW.png', 'IMG_CR2.png', 'IMG_DNG.png', 'IMG_NEF.png', 'PAIR_0001.png'];
let work: string;
let quick: Record<string, string>;
let server: RemoteServer;

beforeAll(async () => {
  ensureBuilt();
  work = tempDir();
  const picture = await rawPicture(6, WIDTH, HEIGHT);
  const raws = await rawFiles(picture);
  // The camera's JPEG of the pair: upright, as a camera writes it with an EXIF orientation (here none needed).
  const pairJpeg = await sharp(picture.rgb, { raw: { width: picture.width, height: picture.height, channels: 3 } })
    .rotate(90)
    .jpeg()
    .toBuffer();
  writeTree(path.join(work, 'shoot'), {
    ...raws,
    'PAIR_0001.CR2': raws['IMG_CR2.CR2'] as Buffer,
    'PAIR_0001.JPG': pairJpeg,
    'IMG_DNG.xmp': '<x:xmpmeta xmlns:x="adobe:ns:meta/"/>',
    'IMG_CR2.xmp': '<x:xmpmeta xmlns:x="adobe:ns:meta/"/>',
    'clip.mov': Buffer.from('\0\0\0\x14ftypqt  \0\0\0\0qt  ', 'latin1'),
  });
  quick = await addQuickModel(path.join(work, 'data'));
  server = await startRemoteServer([], 'quick');
}, LONG);

afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

const removeLocal = (input: string, output: string, ...flags: string[]) =>
  rmbg(['remove', input, '--local', ...QUICK_MODEL, '-o', output, '--json', ...flags], { cwd: work, env: quick });

/** The cutout of the upright picture: full size, its red marker (top left) opaque, the background removed. */
async function expectUprightCutout(file: string): Promise<void> {
  const { data, info } = await sharp(file).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const alpha = (x: number, y: number) => data[(y * info.width + x) * 4 + 3];
  expect({
    file,
    size: [info.width, info.height],
    marker: alpha(5, 5),
    background: alpha(WIDTH - 5, HEIGHT - 5),
  }).toEqual({
    file,
    size: [WIDTH, HEIGHT],
    marker: 255,
    background: 0,
  });
}

const outputsIn = (folder: string) =>
  readdirSync(path.join(work, folder))
    .filter((name) => !name.startsWith('.') && name !== 'review.html')
    .sort();

describe.each(['preview', 'develop'])('a folder of RAWs, a RAW+JPEG pair and sidecars, --raw %s', (way) => {
  it('cuts out every RAW upright at full size, the pair once, and counts the sidecars it skipped', async () => {
    const result = await removeLocal('shoot', `out-${way}`, '--raw', way);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(jsonLines(result.stdout).summary).toMatchObject({
      done: 5,
      failed: 0,
      ignored: { count: 3, byExtension: { '.xmp': 2, '.mov': 1 } },
      rawPairs: { count: 1, processed: 'raw' },
    });
    expect(outputsIn(`out-${way}`)).toEqual(RAW_OUTPUTS);
    for (const name of RAW_OUTPUTS) await expectUprightCutout(path.join(work, `out-${way}`, name));
  });
});

/** Debian's ImageMagick by its own name (another `convert` may come first on PATH): a reader of the PSDs. */
const CONVERT =
  ['convert-im6.q16', 'convert-im7.q16', 'magick'].map((name) => `/usr/bin/${name}`).find((file) => existsSync(file)) ??
  'convert';

describe('a layered PSD and a mask of every RAW', () => {
  it('each RAW gives a full-size, upright PSD whose layer mask, as ImageMagick reads it, is its mask file', async () => {
    const result = await removeLocal('shoot', 'out-psd', '--format', 'psd', '--mask');
    expect(result.exitCode, result.stderr).toBe(0);
    for (const name of RAW_OUTPUTS.map((file) => path.basename(file, '.png'))) {
      const psd = path.join(work, 'out-psd', `${name}.psd`);
      const mask = path.join(work, 'out-psd', `${name}.mask.png`);
      const layerAlpha = execFileSync(CONVERT, [`${psd}[1]`, '-alpha', 'extract', '-depth', '8', 'gray:-']);
      const maskPixels = await sharp(mask).toColourspace('b-w').raw().toBuffer({ resolveWithObject: true });
      expect({ name, size: [maskPixels.info.width, maskPixels.info.height] }).toEqual({ name, size: [WIDTH, HEIGHT] });
      expect({ name, layerAlpha: [...layerAlpha] }).toEqual({ name, layerAlpha: [...maskPixels.data] });
      // The photo layer is the RAW's own upright picture: its red marker where the mask keeps it.
      const layer = execFileSync(CONVERT, [`${psd}[1]`, '-alpha', 'off', '-depth', '8', 'rgb:-']);
      const marker = [...layer.subarray((5 * WIDTH + 5) * 3, (5 * WIDTH + 5) * 3 + 3)];
      expect({ name, red: (marker[0] as number) > 150 && (marker[2] as number) < 100 }).toEqual({ name, red: true });
      expect({ name, marker: maskPixels.data[5 * WIDTH + 5], corner: maskPixels.data[WIDTH * HEIGHT - 1] }).toEqual({
        name,
        marker: 255,
        corner: 0,
      });
    }
  });
});

describe('a RAW+JPEG pair', () => {
  it('--raw-pairs both writes both, named apart; --raw-pairs jpeg the JPEG alone', async () => {
    const both = await removeLocal('shoot', 'out-both', '--raw-pairs', 'both');
    expect(both.exitCode, both.stderr).toBe(0);
    expect(outputsIn('out-both')).toEqual(
      [...RAW_OUTPUTS.filter((name) => name !== 'PAIR_0001.png'), 'PAIR_0001.CR2.png', 'PAIR_0001.JPG.png'].sort(),
    );
    for (const name of ['PAIR_0001.CR2.png', 'PAIR_0001.JPG.png'])
      await expectUprightCutout(path.join(work, 'out-both', name));
    const jpeg = await removeLocal('shoot', 'out-jpeg', '--raw-pairs', 'jpeg');
    expect(
      jsonLines(jpeg.stdout)
        .files.map((file) => path.basename(file.input))
        .filter((name) => name.startsWith('PAIR')),
    ).toEqual(['PAIR_0001.JPG']);
  });
});

describe('what was passed over', () => {
  it('--dry-run says it in words: the sidecars by extension, the pair and which half is processed', async () => {
    const result = await rmbg(['remove', 'shoot', '--local', '-o', 'out-dry', '--dry-run'], { cwd: work, env: quick });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toContain('dry run: 5 of 5 images would be processed');
    expect(result.stdout).toContain('skipped 3 files rmbg does not read: .xmp 2, .mov 1');
    expect(result.stdout).toContain('1 RAW+JPEG pair of one shot: the RAW of each processed, its JPEG left');
  });

  it('a named file rmbg does not read says what it reads on this computer', async () => {
    const result = await removeLocal('shoot/clip.mov', 'out-mov');
    expect(result.exitCode).toBe(1);
    expect(jsonLines(result.stdout).files[0]?.error).toEqual({
      code: 'unsupported_image_format',
      message: `the data is ISO media (brand "qt", e.g. MP4/MOV video); on this computer rmbg reads ${PHOTO_FORMATS_TEXT}`,
    });
  });
});

describe('a RAW named on its own', () => {
  it("keeps the RAW's artist and date with --keep-metadata", async () => {
    const result = await removeLocal('shoot/IMG_NEF.NEF', 'out-meta', '--keep-metadata');
    expect(result.exitCode, result.stderr).toBe(0);
    const { exif } = await sharp(readFileSync(path.join(work, 'out-meta/IMG_NEF.png'))).metadata();
    const tags = exifReader(exif as Buffer);
    expect(tags.Image?.Artist).toBe(RAW_EXIF.artist);
    expect(tags.Photo?.DateTimeOriginal).toBeInstanceOf(Date);
  });

  it('is converted on this computer and sent to rmbg serve, which takes only JPG, PNG and WebP', async () => {
    const key = await server.account(10);
    const result = await rmbg(
      ['remove', 'shoot/IMG_DNG.dng', '-o', 'out-remote', '--api-url', server.url, '--api-key', key, '--json'],
      { cwd: work, configDir: path.join(work, 'client-config') },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    expect(jsonLines(result.stdout).summary).toMatchObject({ done: 1, credits: PRICE });
    await expectUprightCutout(path.join(work, 'out-remote/IMG_DNG.png'));
    // Developed instead, it is another upload: a request of its own, not the preview's result replayed.
    const developed = await rmbg(
      ['remove', 'shoot/IMG_DNG.dng', '-o', 'out-remote', '--api-url', server.url, '--api-key', key, '--json'].concat([
        '--raw',
        'develop',
        '--overwrite',
      ]),
      { cwd: work, configDir: path.join(work, 'client-config') },
    );
    expect(developed.exitCode, developed.stderr).toBe(0);
    expect(jsonLines(developed.stdout).files[0]).toMatchObject({ status: 'done', replayed: false, credits: PRICE });
    await expectUprightCutout(path.join(work, 'out-remote/IMG_DNG.png'));
  });
});

describe('rmbg remove DIR --watch', () => {
  it('cuts out a RAW that lands in the watched folder, upright at full size', async () => {
    mkdirSync(path.join(work, 'watched'));
    const child = rmbg(['remove', 'watched', '--local', ...QUICK_MODEL, '-o', 'out-watch', '--watch', '--json'], {
      cwd: work,
      env: quick,
    });
    let stdout = '';
    let stderr = '';
    const heard = (holds: () => boolean) =>
      new Promise<void>((resolve, reject) => {
        const check = () => (holds() ? resolve() : undefined);
        child.stdout?.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          check();
        });
        child.stderr?.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          check();
        });
        void child.then(() => reject(new Error(`rmbg exited early:\n${stdout}\n${stderr}`)), reject);
        check();
      });
    await heard(() => stderr.includes('rmbg: watching watched for new photos'));
    copyFileSync(path.join(work, 'shoot/IMG_NEF.NEF'), path.join(work, 'watched/IMG_NEF.NEF'));
    await heard(() => jsonLines(stdout).files.some((file) => file.input.endsWith('IMG_NEF.NEF')));
    child.kill('SIGINT');
    await child.catch(() => undefined);
    expect(jsonLines(stdout).files.find((file) => file.input.endsWith('IMG_NEF.NEF'))?.status).toBe('done');
    await expectUprightCutout(path.join(work, 'out-watch/IMG_NEF.png'));
  });
});
