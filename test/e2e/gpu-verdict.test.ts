// auto takes the GPU only where it is faster: the first start measures the GPU's run against the CPU provider's
// and remembers the verdict in the user's cache; the next start uses it without probing or measuring. On
// lavapipe (through the opt-in for tests, as if it were a hardware GPU), with the warm-key model.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOFTWARE_GPU_OPT_IN } from '../../src/api/device.js';
import { writeWarmKeyModel } from '../helpers/fast-models.js';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';

let photo: string;
let model: string;

beforeAll(async () => {
  const dir = tempDir('rmbg-verdict-');
  // A copy of its own: a verdict holds for one model file, and warmKeyModel()'s shared file is rewritten by
  // every test file that asks for it.
  model = writeWarmKeyModel(path.join(dir, 'warm-key.onnx'));
  photo = path.join(dir, 'disc.jpg');
  writeFileSync(photo, await jpegPhoto(160, 120));
});
afterAll(removeTempDirs);

const said = (stderr: string) => stderr.split('\n').find((line) => line.startsWith('rmbg: the model is running on'));

describe("auto's GPU-or-CPU verdict", () => {
  it('is measured at the first start, remembered, and used by the next start without a probe', async () => {
    const cache = tempDir('rmbg-verdict-cache-');
    const env = { [SOFTWARE_GPU_OPT_IN]: '1', XDG_CACHE_HOME: cache };
    const remove = (out: string) =>
      rmbg(['remove', photo, '--local', '--model', model, '-o', path.join(cache, out), '--json'], { env });
    const first = await remove('first');
    expect(first.exitCode, first.stderr).toBe(0);
    expect(said(first.stderr)).toMatch(/faster .*\(GPU \d+ ms, CPU \d+ ms a run, measured /);
    const file = path.join(cache, 'rmbg', 'gpu-verdicts.json');
    expect(existsSync(file)).toBe(true);
    const [verdict] = Object.values(JSON.parse(readFileSync(file, 'utf8')) as Record<string, { device: string }>);
    const second = await remove('second');
    expect(second.exitCode, second.stderr).toBe(0);
    // Said from the cache: nothing was probed or measured.
    expect(said(second.stderr)).toContain(`remembered in ${file}`);
    const summary = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1) as string) as { device: string };
    expect(summary(first.stdout).device).toBe(verdict?.device);
    expect(summary(second.stdout).device).toBe(verdict?.device);
    // rmbg doctor shows the two times and the verdict for the model the settings name.
    const doctor = await rmbg(['doctor'], { env: { ...env, RMBG_MODEL: model } });
    expect(doctor.stdout).toMatch(
      new RegExp(
        `auto's verdict for the model: the ${verdict?.device === 'gpu' ? 'GPU' : 'CPU'} is faster \\(GPU \\d+ ms, CPU \\d+ ms a run, measured `,
      ),
    );
  });
});
