// What a person at a terminal sees from `rmbg remove` (util-linux `script` gives the CLI a pseudo-terminal):
// a progress bar with photos per second and the time left, then a short summary with the time and credits.

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { ensureBuilt, HAS_SCRIPT, removeTempDirs, rmbgOnTerminal, tempDir } from '../helpers/cli.js';
import { writeTree } from '../helpers/remove-local-files.js';
import { writeIdentityModel } from '../helpers/onnx-writer.js';

/** Terminal output without carriage returns and ANSI control sequences (cursor, colours, line clearing). */
const plain = (text: string) => text.replace(/\r/g, '').replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');

beforeAll(ensureBuilt);
afterAll(removeTempDirs);

describe.skipIf(!HAS_SCRIPT)('rmbg remove at a terminal', () => {
  it('shows photos per second and the time left, and ends with done, skipped, failed, time and credits', async () => {
    const work = tempDir();
    // The tiny identity network: fast, and the photos keep their size (this test is about the terminal).
    const model = path.join(work, 'identity.onnx');
    writeIdentityModel(model, 'input', 'output');
    const photo = await jpegPhoto(200, 150);
    writeTree(path.join(work, 'in'), { 'a.jpg': photo, 'b.jpg': photo, 'c.jpg': photo });
    writeFileSync(path.join(work, 'in', 'broken.jpg'), photo.subarray(0, 200));

    const run = await rmbgOnTerminal(['remove', 'in', '-o', 'out', '--local', '--model', model], { cwd: work });
    const text = plain(run.stdout);
    expect(run.exitCode, text).toBe(1);
    // The bar as it was last drawn: 4 of 4, a rate and no time left.
    expect(text).toMatch(/4\/4 \| \d+(\.\d)? photos\/s \| 0 s left \| 1 failed \| 0 credits \|/);
    expect(text).toMatch(
      /rmbg: 3 done, 0 skipped, 1 failed of 4 in [\d.]+ s \(\d+(\.\d)? photos\/s\); 0 credits charged$/m,
    );
    expect(text).not.toContain('{"input"');

    // A re-run skips what is done: skipped photos take no time, so the rate says nothing yet.
    const again = plain(
      (await rmbgOnTerminal(['remove', 'in', '-o', 'out', '--local', '--model', model], { cwd: work })).stdout,
    );
    expect(again).toMatch(
      /rmbg: 0 done, 4 skipped \(1 failed before; --retry-failed retries them\), 0 failed of 4 in [\d.]+ s; 0 credits charged$/m,
    );
  });
});
