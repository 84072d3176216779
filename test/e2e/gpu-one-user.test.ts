// One GPU user per process, whatever the number of rmbg copies in it: two worker threads that each import the
// built package (two copies, each with its own module state) cut out at once on lavapipe, a real WebGPU adapter.
// Two WebGPU users at once ended such a process with SIGSEGV; now the first copy keeps the GPU and the second
// does not use it.

import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOFTWARE_GPU_OPT_IN } from '../../src/api/device.js';
import { gpuEnvironment } from '../../src/engine/gpu/gpu-environment.js';
import { saveVerdict, verdictKey } from '../../src/engine/gpu/gpu-verdict.js';
import { resolveModel } from '../../src/engine/model/model-registry.js';
import { writeWarmKeyModel } from '../helpers/fast-models.js';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { cliEnv, removeTempDirs, ROOT, tempDir } from '../helpers/cli.js';

const SCRIPT = path.join(ROOT, 'test/fixtures/two-threads-gpu.mjs');
const ENTRY = path.join(ROOT, 'dist/index.js');
let model: string;
let photo: string;

interface Answer {
  ok: boolean;
  device?: string;
  code?: string;
  message?: string;
}

beforeAll(async () => {
  const dir = tempDir('rmbg-gpu-threads-');
  // A copy of its own: the verdict written below holds for one model file, and warmKeyModel()'s shared file is
  // rewritten by every test file that asks for it.
  model = writeWarmKeyModel(path.join(dir, 'warm-key.onnx'));
  photo = path.join(dir, 'disc.jpg');
  writeFileSync(photo, await jpegPhoto(160, 120));
});
afterAll(removeTempDirs);

async function twoThreads(device: string, env: Record<string, string> = {}) {
  const run = await execa(process.execPath, [SCRIPT, ENTRY, model, photo, device, '6'], {
    env: cliEnv({ env }),
    extendEnv: false,
    reject: false,
  });
  return { run, answers: run.exitCode === 0 ? (JSON.parse(run.stdout) as { a: Answer[]; b: Answer[] }) : undefined };
}

describe('two copies of rmbg in one process (worker threads)', () => {
  it("device 'gpu': the process ends normally; the first copy runs on the GPU, the second fails device_unavailable saying why", async () => {
    const { run, answers } = await twoThreads('gpu', { [SOFTWARE_GPU_OPT_IN]: '1' });
    expect(run.signal, run.stderr).toBeUndefined();
    expect(run.exitCode, run.stderr).toBe(0);
    expect(answers?.a).toHaveLength(7);
    for (const answer of answers?.a ?? []) expect(answer).toMatchObject({ ok: true, device: 'gpu' });
    expect(answers?.b).toHaveLength(6);
    for (const answer of answers?.b ?? []) {
      expect(answer).toMatchObject({ ok: false, code: 'device_unavailable' });
      expect(answer.message).toContain('another copy of rmbg in this process');
    }
  });

  it("device 'auto': the first copy runs on the GPU, the second on the CPU", async () => {
    // auto takes lavapipe (a software adapter) only with the opt-in for tests, as if it were a hardware GPU.
    // auto's remembered verdict says the GPU is faster here, so the point is only who gets the GPU.
    const cache = tempDir('rmbg-gpu-threads-cache-');
    const key = verdictKey(gpuEnvironment(), resolveModel(model));
    saveVerdict(
      key,
      { device: 'gpu', gpuMs: 1, cpuMs: 2, gpuStartMs: 1, cpuStartMs: 1, at: 'a test' },
      path.join(cache, 'rmbg', 'gpu-verdicts.json'),
    );
    const { run, answers } = await twoThreads('auto', { [SOFTWARE_GPU_OPT_IN]: '1', XDG_CACHE_HOME: cache });
    expect(run.signal, run.stderr).toBeUndefined();
    expect(run.exitCode, run.stderr).toBe(0);
    expect(answers?.a).toHaveLength(7);
    for (const answer of answers?.a ?? []) expect(answer).toMatchObject({ ok: true, device: 'gpu' });
    expect(answers?.b).toHaveLength(6);
    for (const answer of answers?.b ?? []) expect(answer).toMatchObject({ ok: true, device: 'cpu' });
  });
});
