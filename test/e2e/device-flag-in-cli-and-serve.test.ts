// --device through the real CLI and a real `rmbg serve`, on this machine's two situations: a real WebGPU adapter
// (Mesa's lavapipe, a Vulkan driver that runs on the CPU), and no adapter at all (the Vulkan loader pointed at
// no driver). The model is a 1×1 convolution at the default model's contract, so the GPU has real work whose
// result the CPU can check.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOFTWARE_GPU_OPT_IN } from '../../src/api/device.js';
import { gpuEnvironment } from '../../src/engine/gpu/gpu-environment.js';
import { writeRedChannelModel } from '../helpers/onnx-writer.js';
import { removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { createKey, startServe, type ServeProcess } from '../helpers/serve-harness.js';

const NO_ADAPTER = { VK_DRIVER_FILES: '/nonexistent/no-vulkan-driver.json' };
/** lavapipe is a software adapter: the GPU runs below use it through the opt-in for tests. */
const SOFTWARE_GPU = { [SOFTWARE_GPU_OPT_IN]: '1' };
/** auto's reason depends on whether this machine has a GPU device; CI has none. */
const NO_GPU_DEVICE = gpuEnvironment().devices.length === 0;
let work: string;
let model: string;
let photo: string;

beforeAll(async () => {
  work = tempDir('rmbg-gpu-e2e-');
  model = path.join(work, 'red.onnx');
  writeRedChannelModel(model, { width: 1024, height: 1024, bias: 0.3, inputName: 'input', outputName: 'output' });
  photo = path.join(work, 'cat.png');
  await sharp(path.join(import.meta.dirname, '../../samples/chelsea.png'))
    .resize(240)
    .toFile(photo);
});
afterAll(removeTempDirs);

const jsonLines = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
const alpha = (file: string) => sharp(file).extractChannel(3).raw().toBuffer();

describe('rmbg remove --device', () => {
  it('gpu on a real adapter: the cut-out agrees with the CPU within 1/255, and the summary says gpu', async () => {
    const removeOn = (device: string) =>
      rmbg(
        [
          'remove',
          photo,
          '--local',
          '--model',
          model,
          '--device',
          device,
          '--format',
          'png',
          '-o',
          path.join(work, device),
          '--json',
        ],
        { env: SOFTWARE_GPU },
      );
    const [onGpu, onCpu] = await Promise.all([removeOn('gpu'), removeOn('cpu')]);
    expect(onGpu.exitCode, onGpu.stderr).toBe(0);
    expect(onCpu.exitCode, onCpu.stderr).toBe(0);
    expect(jsonLines(onGpu.stdout).at(-1)).toMatchObject({ summary: true, done: 1, device: 'gpu' });
    expect(jsonLines(onCpu.stdout).at(-1)).toMatchObject({ summary: true, done: 1, device: 'cpu' });
    expect(onGpu.stderr).toContain('rmbg: the model is running on the GPU (WebGPU)');
    // JSON lines stay JSON: nothing the Vulkan loader or Dawn print reaches stdout.
    expect(() => jsonLines(onGpu.stdout)).not.toThrow();
    const [gpuAlpha, cpuAlpha] = await Promise.all([
      alpha(path.join(work, 'gpu/cat.png')),
      alpha(path.join(work, 'cpu/cat.png')),
    ]);
    expect(gpuAlpha.length).toBe(cpuAlpha.length);
    expect(Math.max(...gpuAlpha.map((value, i) => Math.abs(value - (cpuAlpha[i] as number))))).toBeLessThanOrEqual(1);
    expect(new Set(cpuAlpha).size).toBeGreaterThan(20);
  });

  it.runIf(NO_GPU_DEVICE)(
    'auto (the default) does not use the software adapter: it runs on the CPU and says why, once',
    async () => {
      const result = await rmbg([
        'remove',
        photo,
        '--local',
        '--model',
        model,
        '-o',
        path.join(work, 'auto'),
        '--json',
      ]);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(jsonLines(result.stdout).at(-1)).toMatchObject({ summary: true, done: 1, device: 'cpu' });
      const said = result.stderr.split('\n').filter((line) => line.startsWith('rmbg: the model is running on'));
      expect(said).toEqual([
        expect.stringMatching(
          /^rmbg: the model is running on the CPU: no GPU device found \(GPU devices: none; .*\(software\).*\); software adapters are never used by auto$/,
        ),
      ]);
      expect(result.stderr).not.toMatch(/Warning|vkCreateInstance|Loader Message/);
    },
  );

  it('gpu on a software adapter without the opt-in: device_unavailable naming it and the fix, exit 1, no output', async () => {
    const out = path.join(work, 'software');
    const result = await rmbg(['remove', photo, '--local', '--model', model, '--device', 'gpu', '-o', out, '--json']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /^rmbg: cannot run model .*red\.onnx on the GPU: the only WebGPU adapter here is a software one \(llvmpipe [^)]*\)+, which runs on the CPU and is slower than device 'cpu'\. /,
    );
    expect(result.stderr).toContain('To fix: ');
    expect(result.stderr).toContain('(device_unavailable)');
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });

  it('gpu without an adapter: device_unavailable, exit 1, what failed and how to fix it, no output, no noise', async () => {
    const out = path.join(work, 'none');
    const result = await rmbg(['remove', photo, '--local', '--model', model, '--device', 'gpu', '-o', out, '--json'], {
      env: NO_ADAPTER,
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /^rmbg: cannot run model .*red\.onnx on the GPU: WebGPU failed: Failed to get a WebGPU adapter: No supported adapters\. /,
    );
    expect(result.stderr).toContain('Vulkan drivers: none');
    // The loader alone: its Recommends would bring lavapipe, a software driver rmbg does not use.
    expect(result.stderr).toContain('apt-get install --no-install-recommends libvulkan1');
    expect(result.stderr).toContain('(device_unavailable)');
    // The loader's own words come inside the message, not as stray lines before it.
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });

  it('RMBG_DEVICE and rmbg config set device choose it too; a wrong value names where it came from', async () => {
    const settings = tempDir('rmbg-gpu-settings-');
    const set = await rmbg(['config', 'set', 'device', 'gpu'], { env: { RMBG_CONFIG_DIR: settings } });
    expect(set.exitCode, set.stderr).toBe(0);
    const fromConfig = await rmbg(
      ['remove', photo, '--local', '--model', model, '-o', path.join(work, 'config'), '--json'],
      { env: { RMBG_CONFIG_DIR: settings, ...NO_ADAPTER } },
    );
    expect(fromConfig.exitCode).toBe(1);
    expect(fromConfig.stderr).toContain('(device_unavailable)');
    expect(existsSync(path.join(work, 'config')) ? readdirSync(path.join(work, 'config')) : []).toEqual([]);
    const fromEnv = await rmbg(['remove', photo, '--local', '--model', model, '-o', path.join(work, 'env'), '--json'], {
      env: { RMBG_DEVICE: 'tpu' },
    });
    expect(fromEnv.exitCode).toBe(2);
    expect(fromEnv.stderr).toContain('RMBG_DEVICE must be one of auto, gpu, cpu; got "tpu"');
    const badSet = await rmbg(['config', 'set', 'device', 'tpu'], { env: { RMBG_CONFIG_DIR: settings } });
    expect(badSet.exitCode).toBe(2);
    expect(readFileSync(path.join(settings, 'config.json'), 'utf8')).toContain('"device": "gpu"');
  });
});

describe('rmbg serve --device', () => {
  let server: ServeProcess | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  it('gpu on a real adapter: says so when it listens, in /readyz and /metrics, and serves a request from the GPU', async () => {
    const dataDir = tempDir('rmbg-gpu-serve-');
    const { key } = await createKey(dataDir, 5);
    server = await startServe(dataDir, ['--model', model, '--device', 'gpu'], SOFTWARE_GPU);
    const ready = (await (await fetch(`${server.url}/readyz`)).json()) as { status: string; device: string };
    expect(ready).toEqual({ status: 'ready', device: 'gpu' });
    expect(await (await fetch(`${server.url}/metrics`)).text()).toContain(
      'rmbg_device_info{requested="gpu",device="gpu"} 1',
    );
    const form = new FormData();
    form.set('image_file', new Blob([readFileSync(photo)]), 'cat.png');
    form.set('format', 'png');
    const answer = await fetch(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: { 'X-API-Key': key },
      body: form,
    });
    expect(answer.status).toBe(200);
    const served = Buffer.from(await answer.arrayBuffer());
    expect((await sharp(served).metadata()).channels).toBe(4);
    expect(answer.headers.get('x-credits-charged')).toBe('1');
  });

  it('gpu without an adapter refuses to start, saying why', async () => {
    const dataDir = tempDir('rmbg-gpu-serve-none-');
    const result = await rmbg(['serve', '--port', '0', '--data-dir', dataDir, '--model', model, '--device', 'gpu'], {
      env: NO_ADAPTER,
    });
    expect(result.exitCode).toBe(1);
    expect(result.stdout).not.toContain('listening');
    expect(result.stderr).toContain('Failed to get a WebGPU adapter: No supported adapters');
    expect(result.stderr).toContain('(device_unavailable)');
  });
});

describe('rmbg doctor', () => {
  it('with an adapter: the GPU works (a software one here), whether auto uses it, the models and the store', async () => {
    const result = await rmbg(['doctor', '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as {
      providers: string[];
      gpu: { works: boolean; software: boolean; auto: { device: string } };
      models: Array<{ name: string; status: string; default: boolean }>;
      store: { engine: string };
    };
    expect(report.providers).toContain('webgpu');
    expect(report.gpu.works).toBe(true);
    if (NO_GPU_DEVICE) expect(report.gpu).toMatchObject({ software: true, auto: { device: 'cpu' } });
    expect(report.models.find((entry) => entry.default)?.status).toBe('verified');
    expect(report.store.engine).toBe('sqlite');
    const text = await rmbg(['doctor']);
    if (NO_GPU_DEVICE) {
      // lavapipe, named by what its driver reports, is no GPU: said so, with the fix.
      expect(text.stdout).toMatch(/^GPU \(WebGPU\)\n {2}works: no GPU: only a software adapter \(llvmpipe /m);
      expect(text.stdout).toMatch(/^ {2}fix: /m);
    }
  });

  it('without an adapter: the error, the fix, what the loader said; exit 1 when the device setting asks for the GPU', async () => {
    const result = await rmbg(['doctor'], { env: { ...NO_ADAPTER, RMBG_DEVICE: 'gpu' } });
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toContain('works: no: Failed to get a WebGPU adapter: No supported adapters');
    // The advice fits the situation (this machine may be a container), and shows the VK_* variables set.
    expect(result.stdout).toMatch(
      /^ {2}fix: (inside a container the Vulkan driver comes from the host|WebGPU runs on Vulkan)/m,
    );
    expect(result.stdout).toContain('set by you: VK_DRIVER_FILES=/nonexistent/no-vulkan-driver.json');
    expect(result.stdout).toContain(
      'check the Vulkan variables you set (VK_DRIVER_FILES=/nonexistent/no-vulkan-driver.json)',
    );
    expect(result.stdout).toContain('vkCreateInstance: Found no drivers!');
    expect(result.stdout).toContain('device setting: gpu (from env)');
    expect(result.stderr).toBe('');
    expect((await rmbg(['doctor'], { env: NO_ADAPTER })).exitCode).toBe(0);
  });
});
