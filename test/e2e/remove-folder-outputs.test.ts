// `rmbg remove DIR --local` on a folder as a photographer runs it, twice: the first run cuts out every image
// (kept subfolders, colliding names, JSON lines), the second skips them untouched but regenerates an output
// deleted by hand. The output folder sits inside the input folder on purpose. The quick model: this is about
// the files, not the cut.

import { readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegPhoto, pngPhoto } from '../helpers/hostile-images.js';
import { ensureBuilt, jsonLines, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { addQuickModel, QUICK_MODEL, writeTree } from '../helpers/remove-local-files.js';
import { expectCutout, JOURNAL, listFiles, partialFiles, REVIEW_PAGE } from '../helpers/remove-local-files.js';

let work: string;
let input: string;
let output: string;
let env: Record<string, string>;
const run = () =>
  rmbg(
    ['remove', 'shoot', '-o', 'shoot/cutouts', '--local', '--recursive', '--size', 'preview', '--json', ...QUICK_MODEL],
    { cwd: work, env },
  );

const EXPECTED = {
  // a.jpg and a.png share the stem `a`: each keeps its source extension, so neither overwrites the other.
  'a.jpg.png': { source: 'a.jpg', width: 200, height: 150 },
  'a.png.png': { source: 'a.png', width: 160, height: 120 },
  'sub/deeper/c.png': { source: 'sub/deeper/c.webp', width: 120, height: 90 },
} as const;

beforeAll(async () => {
  ensureBuilt();
  work = tempDir();
  input = path.join(work, 'shoot');
  output = path.join(input, 'cutouts');
  env = await addQuickModel(path.join(work, 'data'));
  writeTree(input, {
    'a.jpg': await jpegPhoto(200, 150),
    'a.png': await pngPhoto(160, 120),
    'sub/deeper/c.webp': await sharp(await jpegPhoto(120, 90))
      .webp({ quality: 95 })
      .toBuffer(),
    'notes.txt': 'sidecar: not an image, not a failure',
    'sub/IMG_0001.xmp': '<x:xmpmeta/>',
  });
});

afterAll(removeTempDirs);

describe('rmbg remove FOLDER --local --recursive', () => {
  let firstRun: { bytes: Map<string, Buffer>; mtimes: Map<string, number> };

  it('writes OUT/<relative path>/<stem>.png for every image, one JSON line each and a summary, exit 0', async () => {
    const result = await run();
    // Only where the model runs (said once by --device auto): no warning about the folder's other files.
    expect(result.stderr).toMatch(/^rmbg: the model is running on the (CPU|GPU \(WebGPU\)): [^\n]*$/);
    expect(result.exitCode).toBe(0);

    const lines = jsonLines(result.stdout);
    const summary = lines.pop();
    expect(summary).toMatchObject({
      summary: true,
      total: 3,
      done: 3,
      skipped: 0,
      failed: 0,
      notStarted: 0,
      stoppedBy: null,
      failedInputs: [],
    });
    expect(lines).toHaveLength(3);
    for (const [name, { source, width, height }] of Object.entries(EXPECTED)) {
      const line = lines.find((l) => l.input === path.join(input, source));
      expect(line, `a JSON line for ${source}`).toBeDefined();
      expect(line).toMatchObject({ output: path.join(output, name), status: 'done', width, height, error: null });
      expect(line!.ms).toEqual(expect.any(Number));
      await expectCutout(path.join(output, name), width, height);
    }
    // Nothing else: no output for the sidecars, no temp files, no lock left behind.
    expect(listFiles(output)).toEqual([JOURNAL, REVIEW_PAGE, ...Object.keys(EXPECTED)].sort());

    firstRun = { bytes: new Map(), mtimes: new Map() };
    for (const name of Object.keys(EXPECTED)) {
      firstRun.bytes.set(name, readFileSync(path.join(output, name)));
      firstRun.mtimes.set(name, statSync(path.join(output, name)).mtimeMs);
    }
  });

  it('on a second run skips the finished files untouched (reason exists), regenerates one deleted by hand, ignores its own outputs', async () => {
    expect(firstRun, 'needs the first run').toBeDefined();
    rmSync(path.join(output, 'sub/deeper/c.png'));
    const result = await run();
    expect(result.exitCode).toBe(0);
    const lines = jsonLines(result.stdout);
    // total 3: the PNGs in shoot/cutouts/ (inside the input folder) are not inputs.
    expect(lines.pop()).toMatchObject({ summary: true, total: 3, done: 1, skipped: 2, failed: 0 });
    for (const name of ['a.jpg.png', 'a.png.png'] as const) {
      const { source } = EXPECTED[name];
      expect(lines.find((l) => l.input === path.join(input, source))).toMatchObject({
        status: 'skipped',
        reason: 'exists',
        output: path.join(output, name),
        error: null,
      });
      expect(readFileSync(path.join(output, name)).equals(firstRun.bytes.get(name)!)).toBe(true);
      expect(statSync(path.join(output, name)).mtimeMs).toBe(firstRun.mtimes.get(name));
    }
    expect(lines.find((l) => l.input === path.join(input, 'sub/deeper/c.webp'))).toMatchObject({
      status: 'done',
      output: path.join(output, 'sub/deeper/c.png'),
    });
    await expectCutout(path.join(output, 'sub/deeper/c.png'), 120, 90);
    expect(listFiles(output)).toEqual([JOURNAL, REVIEW_PAGE, ...Object.keys(EXPECTED)].sort());
    expect(partialFiles(output)).toEqual([]);
  });
});
