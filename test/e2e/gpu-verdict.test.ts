// auto takes the GPU only where it is faster: the first start measures the GPU's run and start against the CPU
// provider's and remembers the verdict in the user's cache; the next start uses it without probing or measuring,
// and a job too small for the GPU's slower start runs on the CPU. On lavapipe (through the opt-in for tests, as if
// it were a hardware GPU), with the warm-key model.

import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOFTWARE_GPU_OPT_IN } from '../../src/api/device.js';
import { fewestPhotosForGpu, type GpuVerdict } from '../../src/engine/gpu/gpu-verdict.js';
import { writeWarmKeyModel } from '../helpers/fast-models.js';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';

let photo: string;
let model: string;
/** A folder of `count` photos (copies of `photo`). */
const folderOf = (count: number): string => {
  const dir = tempDir('rmbg-verdict-photos-');
  for (let i = 0; i < count; i++) copyFileSync(photo, path.join(dir, `p${i}.jpg`));
  return dir;
};

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
const summary = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1) as string) as { device: string };
const verdictsIn = (cache: string) => path.join(cache, 'rmbg', 'gpu-verdicts.json');

/** A user's cache and `rmbg remove INPUT --local` with auto on lavapipe. */
function userWithCache() {
  const cache = tempDir('rmbg-verdict-cache-');
  const env = { [SOFTWARE_GPU_OPT_IN]: '1', XDG_CACHE_HOME: cache };
  const out = tempDir('rmbg-verdict-out-');
  const remove = (input: string, options: { input?: Buffer } = {}) =>
    rmbg(['remove', input, '--local', '--model', model, '-o', out, '--json', '--overwrite'], { env, ...options });
  return { cache, env, remove };
}

describe("auto's GPU-or-CPU verdict", () => {
  it('is measured at the first start, remembered, and used by the next start without a probe', async () => {
    const { cache, env, remove } = userWithCache();
    const photos = folderOf(2);
    const first = await remove(photos);
    expect(first.exitCode, first.stderr).toBe(0);
    expect(said(first.stderr)).toMatch(
      /faster .*\(GPU \d+ ms a run after a \d+ ms start, CPU \d+ ms a run after a \d+ ms start, measured /,
    );
    const file = verdictsIn(cache);
    expect(existsSync(file)).toBe(true);
    const [verdict] = Object.values(JSON.parse(readFileSync(file, 'utf8')) as Record<string, GpuVerdict>);
    expect(verdict?.gpuStartMs).toBeGreaterThan(0);
    expect(verdict?.cpuStartMs).toBeGreaterThan(0);
    const second = await remove(photos);
    expect(second.exitCode, second.stderr).toBe(0);
    // Said from the cache: nothing was probed or measured.
    expect(said(second.stderr)).toContain(`remembered in ${file}`);
    expect(summary(first.stdout).device).toBe(verdict?.device);
    // The second start weighs the starts too: two photos go to the GPU only if it ends them sooner.
    expect(summary(second.stdout).device).toBe(2 >= fewestPhotosForGpu(verdict as GpuVerdict) ? 'gpu' : 'cpu');
    // rmbg doctor shows the two times and the verdict for the model the settings name.
    const doctor = await rmbg(['doctor'], { env: { ...env, RMBG_MODEL: model } });
    expect(doctor.stdout).toMatch(
      new RegExp(
        `auto's verdict for the model: the ${verdict?.device === 'gpu' ? 'GPU' : 'CPU'} is faster \\(GPU \\d+ ms a run after a \\d+ ms start, CPU \\d+ ms a run after a \\d+ ms start, measured `,
      ),
    );
  });

  it('is not measured for a job of one photo, which runs on the CPU', async () => {
    const { cache, remove } = userWithCache();
    const fromStdin = await remove('-', { input: readFileSync(photo) });
    expect(fromStdin.exitCode, fromStdin.stderr).toBe(0);
    expect(said(fromStdin.stderr)).toContain('running on the CPU');
    expect(said(fromStdin.stderr)).toContain(
      'a job of one photo ends sooner on the CPU than the GPU could be measured',
    );
    expect(fromStdin.stdout.length).toBeGreaterThan(0);
    const onePhoto = await remove(folderOf(1));
    expect(onePhoto.exitCode, onePhoto.stderr).toBe(0);
    expect(summary(onePhoto.stdout).device).toBe('cpu');
    expect(existsSync(verdictsIn(cache))).toBe(false);
  });

  it("weighs the GPU's slower start against the job's photos", async () => {
    const { cache, env, remove } = userWithCache();
    const measured = await remove(folderOf(2));
    expect(measured.exitCode, measured.stderr).toBe(0);
    // The verdict of a GPU that runs 40× faster but starts 2.5 s later: from 7 photos on, it ends sooner.
    const file = verdictsIn(cache);
    const [key] = Object.keys(JSON.parse(readFileSync(file, 'utf8')) as Record<string, GpuVerdict>);
    const verdict: GpuVerdict = {
      device: 'gpu',
      gpuMs: 10,
      cpuMs: 400,
      gpuStartMs: 3000,
      cpuStartMs: 500,
      at: 'a test',
    };
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ [key as string]: verdict }));

    const six = await remove(folderOf(6));
    expect(six.exitCode, six.stderr).toBe(0);
    expect(summary(six.stdout).device).toBe('cpu');
    expect(said(six.stderr)).toContain(
      'this job ends sooner on the CPU, as the GPU starts slower (6 photos: about 3.1 s on the GPU, 2.9 s on the CPU',
    );
    const seven = await remove(folderOf(7));
    expect(seven.exitCode, seven.stderr).toBe(0);
    expect(summary(seven.stdout).device).toBe('gpu');
    expect(said(seven.stderr)).toContain('the GPU is faster here for this model');
    const doctor = await rmbg(['doctor'], { env: { ...env, RMBG_MODEL: model } });
    expect(doctor.stdout).toContain('a job of fewer than 7 photos runs on the CPU, which starts sooner');

    // A verdict saved by an rmbg that did not measure the starts is measured again, so a single photo is not sent
    // to the GPU on its word.
    const { gpuStartMs, cpuStartMs, ...withoutStarts } = verdict;
    writeFileSync(file, JSON.stringify({ [key as string]: withoutStarts }));
    const one = await remove(folderOf(1));
    expect(one.exitCode, one.stderr).toBe(0);
    expect(summary(one.stdout).device).toBe('cpu');
    expect(said(one.stderr)).toContain('a job of one photo ends sooner on the CPU than the GPU could be measured');
  });
});
