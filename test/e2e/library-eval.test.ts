// The library tried the usual way from a shell, `node --input-type=module -e "import … from 'rmbg'"` in the
// repository (issue #21): the inference worker must start although a worker cannot inherit --input-type, and
// the flags that matter to it (--import, the heap limit) must still reach it. The script runs the warm-key model
// (RMBG_MODEL, test/helpers/fast-models.ts): what is checked is the worker and a cutout written, not its quality.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureBuilt, removeTempDirs, ROOT, tempDir } from '../helpers/cli.js';
import { writeWarmKeyModel } from '../helpers/fast-models.js';

afterAll(() => removeTempDirs());

interface Mark {
  thread: 'main' | 'worker';
  heapLimitMb: number;
}

describe('removeBackground() under node --input-type=module -e', () => {
  it('writes the cutout, a PNG with alpha at the size asked; --import and --max-old-space-size reach the worker', async () => {
    ensureBuilt();
    const dir = tempDir();
    const out = path.join(dir, 'cat.png');
    const marks = path.join(dir, 'marks.jsonl');
    // Loaded by --import in every thread that honours it: says which thread it ran in, and its heap limit.
    const marker = path.join(dir, 'marker.mjs');
    writeFileSync(
      marker,
      `import { appendFileSync } from 'node:fs';
      import { getHeapStatistics } from 'node:v8';
      import { isMainThread } from 'node:worker_threads';
      const heapLimitMb = Math.round(getHeapStatistics().heap_size_limit / 2 ** 20);
      appendFileSync(process.env.MARKS_FILE, JSON.stringify({ thread: isMainThread ? 'main' : 'worker', heapLimitMb }) + '\\n');`,
    );
    const script = `
      import { writeFileSync } from 'node:fs';
      import { removeBackground, close } from 'rmbg';
      const result = await removeBackground(${JSON.stringify(path.join(ROOT, 'samples/chelsea.png'))}, { size: 'preview' });
      writeFileSync(${JSON.stringify(out)}, result.data);
      await close();`;
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RMBG_')));
    // cwd is the repository, so 'rmbg' resolves to its own package (dist/), as it does for someone trying it there.
    const run = await execa(
      process.execPath,
      ['--import', marker, '--max-old-space-size=300', '--input-type=module', '-e', script],
      {
        cwd: ROOT,
        env: {
          ...clean,
          RMBG_CONFIG_DIR: path.join(dir, 'settings'),
          RMBG_DATA_DIR: path.join(dir, 'data'),
          RMBG_MODEL: writeWarmKeyModel(path.join(dir, 'warm-key.onnx')),
          MARKS_FILE: marks,
        },
        extendEnv: false,
        reject: false,
        timeout: 180_000,
      },
    );
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);

    // chelsea.png is 451×300, under preview's 0.25 MP: kept at its size.
    const image = sharp(readFileSync(out));
    expect(await image.metadata()).toMatchObject({
      format: 'png',
      width: 451,
      height: 300,
      channels: 4,
      hasAlpha: true,
    });
    const alpha = await image.extractChannel(3).raw().toBuffer();
    expect(alpha.includes(0)).toBe(true); // some background cleared …
    expect(alpha.includes(255)).toBe(true); // … and the cat kept (by the warm-key model: its warm half)

    const seen = readFileSync(marks, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Mark);
    const main = seen.find((mark) => mark.thread === 'main');
    const workers = seen.filter((mark) => mark.thread === 'worker');
    expect(main?.heapLimitMb).toBeLessThan(1000); // the flag took: Node's own default here is above 2 GB
    expect(workers.length).toBeGreaterThan(0);
    for (const worker of workers) expect(worker.heapLimitMb).toBe(main?.heapLimitMb);
  });
});
