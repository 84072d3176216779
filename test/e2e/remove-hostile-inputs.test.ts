// Hostile and unusual inputs through `rmbg remove --local`: a folder mixing good photos with damaged, animated,
// unsupported, tiny, huge and bomb images (names lie about formats: decoding goes by content), one
// EXIF-rotated photo, and one image through stdin → stdout. The quick model: this is about what reaches it.

import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PHOTO_FORMATS_TEXT } from '../../src/api/media-types.js';
import { jpegWithOrientation } from '../helpers/exif-images.js';
import {
  animatedWebp,
  apng,
  gif,
  jpegPhoto,
  oversizedJpeg,
  pngBombHeader,
  pngWithBadCrc,
  svg,
  tiff,
  tinyPng,
  truncatedJpeg,
  widePng,
} from '../helpers/hostile-images.js';
import { ensureBuilt, HAS_SCRIPT, jsonLines, removeTempDirs, rmbg, rmbgOnTerminal, tempDir } from '../helpers/cli.js';
import {
  addQuickModel,
  expectCutout,
  JOURNAL,
  REVIEW_PAGE,
  listFiles,
  partialFiles,
  QUICK_MODEL,
  writeTree,
} from '../helpers/remove-local-files.js';

let env: Record<string, string>;

afterAll(removeTempDirs);
beforeAll(async () => {
  ensureBuilt();
  env = await addQuickModel(tempDir('rmbg-data-'));
});

describe('rmbg remove FOLDER --local with hostile files beside good ones', () => {
  /** File name → the error code the user must see. Extensions are what the folder scan picks up, not the content. */
  const HOSTILE: Record<string, string> = {
    'truncated.jpg': 'corrupt_image',
    'bad-crc.png': 'corrupt_image',
    'gif-named.png': 'unsupported_image_format',
    'svg-named.png': 'unsupported_image_format',
    'apng.png': 'animated_image',
    'animated.webp': 'animated_image',
    'tiny-32px.png': 'image_dimensions_out_of_range',
    'wide-10000px.png': 'image_dimensions_out_of_range',
    'bomb-20000x20000.png': 'image_dimensions_out_of_range',
    'bomb-9000x9000.png': 'image_too_many_pixels',
    'over-22mib.jpg': 'file_too_large',
  };
  let work: string;

  beforeAll(async () => {
    work = tempDir();
    writeTree(path.join(work, 'in'), {
      'good.jpg': await jpegPhoto(200, 150),
      // Stored 120x160 with EXIF orientation 6: upright it is 160x120.
      'upright.jpg': await jpegWithOrientation(6, 160, 120),
      'truncated.jpg': await truncatedJpeg(),
      'bad-crc.png': await pngWithBadCrc(),
      'gif-named.png': await gif(),
      // A photo is read by its content: a TIFF named .jpg is cut out like any TIFF.
      'tiff-named.jpg': await tiff(),
      'svg-named.png': svg(),
      'apng.png': await apng(),
      'animated.webp': await animatedWebp(),
      'tiny-32px.png': await tinyPng(32, 32),
      'wide-10000px.png': await widePng(10000, 40),
      'bomb-20000x20000.png': pngBombHeader(20000, 20000),
      'bomb-9000x9000.png': pngBombHeader(9000, 9000),
      'over-22mib.jpg': await oversizedJpeg(),
    });
    // Named explicitly, a file is taken whatever its extension (in a folder a .gif would be passed over).
    writeTree(path.join(work, 'loose'), { 'named.gif': await gif() });
  });

  it('does the good files, fails each bad one with its code and no output, exits 1 and names the failures', async () => {
    const result = await rmbg(
      ['remove', 'in', 'loose/named.gif', '-o', 'out', '--local', '--size', 'preview', '--json', ...QUICK_MODEL],
      { cwd: work, env },
    );
    expect(result.exitCode).toBe(1);
    const lines = jsonLines(result.stdout);
    const summary = lines.pop();
    const badPaths = [
      ...Object.keys(HOSTILE).map((name) => path.join(work, 'in', name)),
      path.join(work, 'loose/named.gif'),
    ];
    expect(summary).toMatchObject({ summary: true, total: 15, done: 3, failed: 12, skipped: 0, notStarted: 0 });
    expect([...(summary!.failedInputs as string[])].sort()).toEqual([...badPaths].sort());

    const byName = new Map(lines.map((line) => [path.basename(line.input as string), line]));
    for (const [name, code] of Object.entries(HOSTILE)) {
      const line = byName.get(name);
      expect(line, name).toMatchObject({ status: 'failed', output: null, width: null, height: null, error: { code } });
      expect(
        (line!.error as { message: string }).message.length,
        `${name}: a message saying what was wrong`,
      ).toBeGreaterThan(10);
    }
    expect(byName.get('named.gif')).toMatchObject({
      status: 'failed',
      output: null,
      error: { code: 'unsupported_image_format' },
    });
    expect(byName.get('good.jpg')).toMatchObject({
      status: 'done',
      output: path.join(work, 'out/good.png'),
      width: 200,
      height: 150,
      error: null,
    });
    expect(byName.get('upright.jpg')).toMatchObject({ status: 'done', width: 160, height: 120 });
    expect(byName.get('tiff-named.jpg')).toMatchObject({ status: 'done', width: 64, height: 64 });

    await expectCutout(path.join(work, 'out/good.png'), 200, 150);
    const upright = await sharp(path.join(work, 'out/upright.png')).metadata();
    expect([upright.width, upright.height]).toEqual([160, 120]);
    // No output and no temp file for any bad input: only the three cut-outs and the journal.
    expect(listFiles(path.join(work, 'out'))).toEqual([
      JOURNAL,
      'good.png',
      REVIEW_PAGE,
      'tiff-named.png',
      'upright.png',
    ]);
    expect(partialFiles(path.join(work, 'out'))).toEqual([]);
  });

  it('on a re-run skips both the finished files and the ones that failed for good (failed-before), exit 1; --retry-failed retries them', async () => {
    const result = await rmbg(
      ['remove', 'in', 'loose/named.gif', '-o', 'out', '--local', '--size', 'preview', '--json', ...QUICK_MODEL],
      { cwd: work, env },
    );
    const lines = jsonLines(result.stdout);
    expect(lines.pop()).toMatchObject({ summary: true, total: 15, done: 0, skipped: 15, failedBefore: 12, failed: 0 });
    const bad = lines.filter((line) => line.reason === 'failed-before');
    expect(bad).toHaveLength(12);
    for (const line of bad)
      expect(line.error).toMatchObject({
        code: HOSTILE[path.basename(line.input as string)] ?? 'unsupported_image_format',
      });
    expect(result.exitCode).toBe(1);

    const retried = await rmbg(
      [
        'remove',
        'in',
        'loose/named.gif',
        '-o',
        'out',
        '--local',
        '--size',
        'preview',
        '--json',
        '--retry-failed',
        ...QUICK_MODEL,
      ],
      { cwd: work, env },
    );
    expect(jsonLines(retried.stdout).pop()).toMatchObject({
      summary: true,
      total: 15,
      done: 0,
      skipped: 3,
      failedBefore: 0,
      failed: 12,
    });
    expect(retried.exitCode).toBe(1);
  });
});

/** Terminal output without carriage returns and ANSI control sequences (cursor, colours, line clearing). */
const plain = (text: string) => text.replace(/\r/g, '').replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');

describe.skipIf(!HAS_SCRIPT)('rmbg remove --local at a terminal (util-linux script gives it one)', () => {
  it('prints each failure with its reason and a summary naming the failed files, no JSON; a re-run says they failed before', async () => {
    const work = tempDir();
    writeTree(path.join(work, 'in'), { 'gif-named.png': await gif(), 'tiny.png': await tinyPng(32, 32) });
    const gifPath = path.join(work, 'in/gif-named.png');
    const tinyPath = path.join(work, 'in/tiny.png');

    const first = await rmbgOnTerminal(['remove', 'in', '-o', 'out', '--local', ...QUICK_MODEL], { cwd: work, env });
    expect(first.exitCode).toBe(1);
    const text = plain(first.stdout);
    expect(text).toContain(
      `failed: ${gifPath}: the data is GIF; on this computer rmbg reads ${PHOTO_FORMATS_TEXT} (unsupported_image_format)`,
    );
    expect(text).toMatch(
      new RegExp(
        `failed: ${tinyPath}: the image is 32x32 pixels; each side must be 33 to 9999 pixels \\(image_dimensions_out_of_range\\)`,
      ),
    );
    expect(text).toMatch(/rmbg: 0 done, 0 skipped, 2 failed of 2 in [\d.]+ s; 0 credits charged\n/);
    expect(text.split('\n')).toContain(`failed: ${gifPath}, ${tinyPath}`);
    expect(text).not.toContain('{"input"');

    const again = await rmbgOnTerminal(['remove', 'in', '-o', 'out', '--local', ...QUICK_MODEL], { cwd: work, env });
    expect(plain(again.stdout)).toMatch(
      /rmbg: 0 done, 2 skipped \(2 failed before; --retry-failed retries them\), 0 failed of 2/,
    );
    expect(again.exitCode).toBe(1);
    expect(listFiles(path.join(work, 'out'))).toEqual([JOURNAL]);
  });
});

describe('rmbg remove - --local (stdin → stdout)', () => {
  it('turns a JPEG on stdin into a PNG cut-out on stdout, full size by default', async () => {
    const result = await rmbg(['remove', '-', '--local', '--format', 'png', ...QUICK_MODEL], {
      env,
      input: await jpegPhoto(200, 150),
      encoding: 'buffer',
    });
    // Only where the model runs (said once by --device auto); nothing else.
    expect(Buffer.from(result.stderr).toString()).toMatch(
      /^rmbg: the model is running on the (CPU|GPU \(WebGPU\)): [^\n]*$/,
    );
    expect(result.exitCode).toBe(0);
    const png = Buffer.from(result.stdout);
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    const dir = tempDir();
    writeTree(dir, { 'out.png': png });
    await expectCutout(path.join(dir, 'out.png'), 200, 150);
  });

  it('a corrupt image on stdin: exit 1, the reason on stderr, nothing on stdout', async () => {
    const result = await rmbg(['remove', '-', '--local', '--format', 'png', ...QUICK_MODEL], {
      env,
      input: await truncatedJpeg(),
      encoding: 'buffer',
    });
    expect(result.exitCode).toBe(1);
    expect(Buffer.from(result.stdout).length).toBe(0);
    expect(Buffer.from(result.stderr).toString()).toMatch(
      /^rmbg: the model is running on [^\n]*\nrmbg: stdin: .*\(corrupt_image\)$/,
    );
  });
});
