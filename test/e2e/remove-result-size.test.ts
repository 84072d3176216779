// Result sizes of `rmbg remove --local`: --size preview caps a 1200x900 photo at 0.25 MP, the CLI's default
// is full resolution (unlike the API's preview default), and --overwrite replaces an existing output.
// Each test has its own output folder: neither depends on what the other left.
// Without --recursive, subfolders of an input folder are left alone. The quick model: sizes are the pipeline's.

import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { ensureBuilt, jsonLines, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import {
  addQuickModel,
  expectCutout,
  JOURNAL,
  REVIEW_PAGE,
  listFiles,
  QUICK_MODEL,
  writeTree,
} from '../helpers/remove-local-files.js';

let work: string;
let env: Record<string, string>;

beforeAll(async () => {
  ensureBuilt();
  work = tempDir();
  writeTree(path.join(work, 'in'), {
    'big.jpg': await jpegPhoto(1200, 900),
    'sub/small.jpg': await jpegPhoto(200, 150),
  });
  env = await addQuickModel(path.join(work, 'data'));
});

afterAll(removeTempDirs);

describe('rmbg remove --local: result size', () => {
  const cutout = () => path.join(work, 'out/big.png');

  it('--size preview caps the result at 250,000 pixels, keeping the aspect; without --recursive sub/ is ignored', async () => {
    const result = await rmbg(['remove', 'in', '-o', 'out', '--local', '--size', 'preview', '--json', ...QUICK_MODEL], {
      cwd: work,
      env,
    });
    expect(result.exitCode).toBe(0);
    const [line, summary] = jsonLines(result.stdout);
    expect(summary).toMatchObject({ summary: true, total: 1, done: 1 });
    const { width, height } = await sharp(cutout()).metadata();
    expect(line).toMatchObject({ input: path.join(work, 'in/big.jpg'), status: 'done', width, height });
    expect(width * height).toBeLessThanOrEqual(250_000);
    expect(width * height).toBeGreaterThan(245_000);
    expect(width / height).toBeCloseTo(4 / 3, 2);
    await expectCutout(cutout(), width, height);
    expect(listFiles(path.join(work, 'out'))).toEqual([JOURNAL, 'big.png', REVIEW_PAGE]);
    expect(existsSync(path.join(work, 'out/sub'))).toBe(false);
  });

  it('defaults to full resolution, and --overwrite replaces an existing output (JSON lines without --json: stdout is a pipe)', async () => {
    // An output of its own, known to differ from any cutout: a 40x30 opaque PNG in place of big.png.
    const own = path.join(work, 'out-full/big.png');
    mkdirSync(path.dirname(own), { recursive: true });
    await sharp({ create: { width: 40, height: 30, channels: 3, background: '#123456' } })
      .png()
      .toFile(own);
    const result = await rmbg(['remove', 'in', '-o', 'out-full', '--local', '--overwrite', ...QUICK_MODEL], {
      cwd: work,
      env,
    });
    expect(result.exitCode).toBe(0);
    const [line, summary] = jsonLines(result.stdout);
    expect(summary).toMatchObject({ summary: true, total: 1, done: 1, skipped: 0 });
    expect(line).toMatchObject({ status: 'done', width: 1200, height: 900, output: own });
    await expectCutout(own, 1200, 900);
    expect(listFiles(path.join(work, 'out-full'))).toEqual([JOURNAL, 'big.png', REVIEW_PAGE]);
  });
});
