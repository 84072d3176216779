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
/** What the decoded pictures may leave behind (malloc's arenas, Node's own): under what one 24 MP decode's heap
 * leaves when its worker stays (215 MiB on Node 20, 280 on Node 24; 35 and 98 when it ends). */
const LEFT_BEHIND_MB = 150;

describe('HEIC decodes', () => {
  it("leave no WebAssembly heap behind: the process's memory comes back after three 24 MP HEICs", async () => {
    ensureBuilt();
    const work = tempDir();
    const jpeg = await sharp({ create: { width: 6000, height: 4000, channels: 3, background: '#88aacc' } })
      .composite([
        { input: Buffer.from('<svg width="6000" height="4000"><circle cx="3000" cy="2000" r="1200"/></svg>') },
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
      `import sharp from ${JSON.stringify(path.join(ROOT, 'node_modules/sharp/lib/index.js'))};
      import { removeBackground, close } from ${JSON.stringify(path.join(ROOT, 'dist/index.js'))};
      sharp.cache(false); // libvips' cache of recent images (up to 50 MB) is not what this is about
      // Collected first, so the main thread's own buffers (the decoded pictures it was sent) do not count.
      const rss = () => (globalThis.gc(), process.memoryUsage().rss);
      const options = { model: ${JSON.stringify(model)}, size: 'preview' };
      await removeBackground('small.jpg', options);
      const base = rss();
      const sizes = [];
      for (let i = 0; i < 3; i++) {
        const { width, height } = await removeBackground('big.heic', options);
        sizes.push(width + 'x' + height);
      }
      const peak = rss();
      const deadline = Date.now() + 20_000;
      let after = rss();
      while (after - base > ${LEFT_BEHIND_MB * MB} && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        after = rss();
      }
      await close();
      console.log(JSON.stringify({ sizes, base, peak, after }));`,
    );
    const run = await execa(process.execPath, ['--expose-gc', script], {
      cwd: work,
      env: { GLIBC_TUNABLES: MALLOC_TUNABLES },
      timeout: 120_000,
    });
    const { sizes, base, peak, after } = JSON.parse(run.stdout) as {
      sizes: string[];
      base: number;
      peak: number;
      after: number;
    };
    const report = `RSS ${Math.round(base / MB)} MiB before the HEICs, ${Math.round(peak / MB)} after the last, ${Math.round(after / MB)} at the end`;
    console.log(report);
    // The control: each HEIC was decoded whole (preview: 0.25 MP of its 6000×4000).
    expect(sizes).toEqual(['612x408', '612x408', '612x408']);
    expect(after - base, report).toBeLessThan(LEFT_BEHIND_MB * MB);
  }, 180_000);
});
