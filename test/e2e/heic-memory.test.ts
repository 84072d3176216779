// A HEIC's decode (libheif in WebAssembly, on a pixel worker) grows that worker's heap to the picture's size and
// WebAssembly never gives it back: the worker that decoded one ends after it, so a process that met HEICs does not
// keep about 200 MB per pixel worker for its whole life (issue #38). Seen as the user sees it: the process's RSS.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureBuilt, removeTempDirs, ROOT, tempDir } from '../helpers/cli.js';
import { writeWarmKeyModel } from '../helpers/fast-models.js';
import { MALLOC_TUNABLES } from '../helpers/malloc-settings.js';
import { heicFromJpeg } from '../helpers/photo-formats.js';

afterAll(removeTempDirs);

const MB = 2 ** 20;
/** What the decoded pictures may leave behind, well under one 12 MP decode's heap (about 200 MB). */
const LEFT_BEHIND_MB = 100;

describe('HEIC decodes', () => {
  it("leave no WebAssembly heap behind: the process's memory comes back after three 12 MP HEICs", async () => {
    ensureBuilt();
    const work = tempDir();
    const jpeg = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: '#88aacc' } })
      .composite([
        { input: Buffer.from('<svg width="4000" height="3000"><circle cx="2000" cy="1500" r="900"/></svg>') },
      ])
      .jpeg()
      .toBuffer();
    writeFileSync(path.join(work, 'big.heic'), heicFromJpeg(jpeg, work, 'big'));
    writeFileSync(path.join(work, 'small.jpg'), readFileSync(path.join(ROOT, 'samples/rocket.jpg')));
    const model = writeWarmKeyModel(path.join(work, 'warm-key.onnx'));
    const script = path.join(work, 'heics.mjs');
    // The baseline after one JPEG (engine and pixel workers up), then three HEICs; then the RSS, read until it is
    // back under the allowance or 20 s have passed (retired workers end when their jobs are answered).
    writeFileSync(
      script,
      `import { removeBackground, close } from ${JSON.stringify(path.join(ROOT, 'dist/index.js'))};
      // Collected first, so the main thread's own buffers (the decoded pictures it was sent) do not count.
      const rss = () => (globalThis.gc(), process.memoryUsage().rss);
      const options = { model: ${JSON.stringify(model)}, size: 'preview' };
      await removeBackground('small.jpg', options);
      const base = rss();
      for (let i = 0; i < 3; i++) await removeBackground('big.heic', options);
      const peak = rss();
      const deadline = Date.now() + 20_000;
      let after = rss();
      while (after - base > ${LEFT_BEHIND_MB * MB} && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        after = rss();
      }
      await close();
      console.log(JSON.stringify({ base, peak, after }));`,
    );
    const run = await execa(process.execPath, ['--expose-gc', script], {
      cwd: work,
      env: { GLIBC_TUNABLES: MALLOC_TUNABLES },
      timeout: 120_000,
    });
    const { base, peak, after } = JSON.parse(run.stdout) as { base: number; peak: number; after: number };
    const report = `RSS ${Math.round(base / MB)} MiB before the HEICs, ${Math.round(peak / MB)} after the last, ${Math.round(after / MB)} at the end`;
    console.log(report);
    // The control: the decodes did use the memory this is about.
    expect(peak - base, report).toBeGreaterThan(LEFT_BEHIND_MB * MB);
    expect(after - base, report).toBeLessThan(LEFT_BEHIND_MB * MB);
  }, 180_000);
});
