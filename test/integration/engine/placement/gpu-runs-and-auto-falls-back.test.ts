// The engine on the GPU for real: onnxruntime's WebGPU provider on Mesa's lavapipe (a Vulkan driver on the CPU,
// the adapter CI has). A 1×1-convolution model at the default model's contract (1024², ISNet normalisation)
// makes the mask a known function of the photo, so the GPU's cut-out can be compared with the CPU's.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOFTWARE_GPU_OPT_IN } from '../../../../src/api/device.js';
import { parseRemoveOptions } from '../../../../src/api/options.js';
import { createEngine } from '../../../../src/engine/index.js';
import { cachedGraph } from '../../../../src/engine/model/graph-cache.js';
import { gpuEnvironment } from '../../../../src/engine/gpu/gpu-environment.js';
import { writeRedChannelModel } from '../../../helpers/onnx-writer.js';

// lavapipe is a software adapter: --device gpu runs on it only with the opt-in for tests.
process.env[SOFTWARE_GPU_OPT_IN] = '1';
const dir = mkdtempSync(join(tmpdir(), 'rmbg-gpu-'));
const red = join(dir, 'red.onnx');
const redBrighter = join(dir, 'red-brighter.onnx');
writeRedChannelModel(red, { width: 1024, height: 1024, bias: 0.3, inputName: 'input', outputName: 'output' });
writeRedChannelModel(redBrighter, { width: 1024, height: 1024, bias: 0.6, inputName: 'input', outputName: 'output' });
const options = parseRemoveOptions({ size: 'preview', format: 'png' });
let photo: Buffer;

beforeAll(async () => {
  photo = await sharp(readFileSync(join(import.meta.dirname, '../../../../samples/chelsea.png')))
    .resize(320)
    .png()
    .toBuffer();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function alphaOf(png: Buffer): Promise<Buffer> {
  return sharp(png).extractChannel(3).raw().toBuffer();
}

function maxDifference(a: Buffer, b: Buffer): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs((a[i] as number) - (b[i] as number)));
  return max;
}

describe('--device gpu on a real WebGPU adapter (lavapipe)', () => {
  it('runs on the GPU and agrees with the CPU provider within 1/255', async () => {
    const gpu = await createEngine({ model: red, device: 'gpu', graphCache: false });
    const cpu = await createEngine({ model: red, device: 'cpu', graphCache: false });
    try {
      expect(gpu.device).toMatchObject({ requested: 'gpu', device: 'gpu' });
      expect(cpu.device).toMatchObject({ requested: 'cpu', device: 'cpu' });
      const [onGpu, onCpu] = await Promise.all([gpu.cutOut(photo, options), cpu.cutOut(photo, options)]);
      expect([onGpu.width, onGpu.height]).toEqual([onCpu.width, onCpu.height]);
      const [gpuAlpha, cpuAlpha] = await Promise.all([alphaOf(onGpu.data), alphaOf(onCpu.data)]);
      expect(maxDifference(gpuAlpha, cpuAlpha)).toBeLessThanOrEqual(1);
      // The mask is not flat: the comparison covers real values, not only 0 and 255.
      expect(new Set(cpuAlpha).size).toBeGreaterThan(20);
    } finally {
      await Promise.all([gpu.close(), cpu.close()]);
    }
  });

  it('runs two models on the GPU side by side in one process (one GPU queue)', async () => {
    const [a, b] = await Promise.all([
      createEngine({ model: red, device: 'gpu' }),
      createEngine({ model: redBrighter, device: 'gpu' }),
    ]);
    try {
      const cpu = await createEngine({ model: red, device: 'cpu', graphCache: false });
      const reference = await alphaOf((await cpu.cutOut(photo, options)).data);
      await cpu.close();
      // Many runs of both at once: without the queue, Dawn aborts the process within the first few. Runs of one
      // model in a row share its turn (two in its worker at once); the other model's runs wait for the turn's end.
      const brighter = [false, false, false, true, true, false, false, true, false, true];
      const results = await Promise.all(brighter.map((isB) => (isB ? b : a).cutOut(photo, options)));
      for (const [i, result] of results.entries()) {
        const alpha = await alphaOf(result.data);
        if (brighter[i])
          expect(alpha.reduce((sum, v) => sum + v, 0)).toBeGreaterThan(reference.reduce((sum, v) => sum + v, 0));
        else expect(maxDifference(alpha, reference)).toBeLessThanOrEqual(1);
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('never loads a graph the cache optimised for the CPU into a GPU session, and leaves none for the CPU', async () => {
    const cache = join(dir, 'graphs');
    const sha256 = 'a'.repeat(64);
    const model = { name: 'red', bytes: readFileSync(red).length, sha256 };
    // A CPU graph in the cache under this model's hash, unreadable on purpose: a session that loads it fails.
    const { version } = JSON.parse(
      readFileSync(join(import.meta.dirname, '../../../../node_modules/onnxruntime-common/package.json'), 'utf8'),
    ) as { version: string };
    const cpuEntry = cachedGraph(cache, sha256, version, 'cpu');
    const cpuFile = cpuEntry.saveTo?.replace(/\.\d+\.tmp$/, '') as string;
    writeFileSync(cpuFile, 'a CPU-optimised graph');
    const { WorkerSession } = await import('../../../../src/engine/runtime/inference-worker.js');
    const contract = {
      input: { name: 'input', shape: [1, 3, 1024, 1024] as [number, number, number, number] },
      output: 'output',
      normalization: { mean: [0, 0, 0] as [number, number, number], std: [1, 1, 1] as [number, number, number] },
    };
    const session = await WorkerSession.load(
      { name: 'red', contract, path: red, expected: model, fix: 'none' },
      { provider: 'webgpu', graphCache: cache },
    );
    const plane = await session.run(new Float32Array(3 * 1024 * 1024).fill(0.5));
    await session.release();
    expect(plane.data[0]).toBeCloseTo(0.8, 5);
    expect(readFileSync(cpuFile, 'utf8')).toBe('a CPU-optimised graph'); // neither read (it would fail) nor replaced
    expect(cachedGraph(cache, sha256, version, 'webgpu').cached).toBeUndefined(); // the GPU session saved nothing
  });
});

describe('--device auto', () => {
  it('with a GPU device but only a software adapter: the probe with software hidden finds none, so the CPU, saying why', async () => {
    // This machine's own drivers and loader, plus a GPU device node it lacks: auto then asks WebGPU for real.
    const environment = { ...gpuEnvironment(), devices: ['/dev/dri/renderD128 (a GPU whose driver is missing)'] };
    const engine = await createEngine({ model: red, environment, graphCache: false, softwareGpu: false });
    try {
      expect(engine.device).toMatchObject({ requested: 'auto', device: 'cpu' });
      expect(engine.device.reason).toBe(
        "the GPU failed (Failed to get a WebGPU adapter: No supported adapters); 'rmbg doctor' tells why",
      );
    } finally {
      await engine.close();
    }
  });

  it.runIf(gpuEnvironment().devices.length === 0)(
    'ignores the software adapter: runs on the CPU and says why',
    async () => {
      const engine = await createEngine({ model: red, graphCache: false, softwareGpu: false });
      try {
        expect(engine.device).toMatchObject({ requested: 'auto', device: 'cpu' });
        expect(engine.device.reason).toMatch(/^no GPU device found \(GPU devices: none;.*lvp_icd.*\(software\)/);
        const result = await engine.cutOut(photo, options);
        expect(result.format).toBe('png');
      } finally {
        await engine.close();
      }
    },
  );
});
