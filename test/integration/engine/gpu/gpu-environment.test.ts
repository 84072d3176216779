// Hiding the software Vulkan drivers from the loader (what keeps --device auto off lavapipe and SwiftShader):
// the variables it sets for new and old loaders, and that overlapping loads give the user's own values back.

import { describe, expect, it } from 'vitest';
import {
  gpuFixHint,
  type GpuSituation,
  softwareDriversHidden,
  userEnvironment,
  withSoftwareAdaptersHidden,
  type GpuEnvironment,
} from '../../../../src/engine/gpu/gpu-environment.js';
import { probeGpu } from '../../../../src/engine/gpu/gpu-probe.js';

const drivers = [
  { manifest: 'lvp_icd.json', path: '/usr/share/vulkan/icd.d/lvp_icd.json', software: true },
  { manifest: 'nvidia_icd.json', path: '/usr/share/vulkan/icd.d/nvidia_icd.json', software: false },
  { manifest: 'radeon_icd.json', path: '/usr/share/vulkan/icd.d/radeon_icd.json', software: false },
];
const environment = (loaderVersion: number[]): GpuEnvironment => ({
  platform: 'linux',
  devices: [],
  drivers,
  loader: true,
  loaderVersion,
});

describe('softwareDriversHidden', () => {
  it("disables them by name for a loader that knows VK_LOADER_DRIVERS_DISABLE, keeping the user's own globs", () => {
    expect(softwareDriversHidden({}, environment([1, 3, 239]))).toEqual({
      VK_LOADER_DRIVERS_DISABLE: '*lvp*,*swiftshader*',
    });
    expect(softwareDriversHidden({ VK_LOADER_DRIVERS_DISABLE: '*intel*' }, environment([1, 3, 234]))).toEqual({
      VK_LOADER_DRIVERS_DISABLE: '*intel*,*lvp*,*swiftshader*',
    });
  });

  it('lists the other drivers for an older loader, which ignores that variable', () => {
    expect(softwareDriversHidden({}, environment([1, 3, 204]))).toEqual({
      VK_LOADER_DRIVERS_DISABLE: '*lvp*,*swiftshader*',
      VK_ICD_FILENAMES: '/usr/share/vulkan/icd.d/nvidia_icd.json:/usr/share/vulkan/icd.d/radeon_icd.json',
    });
  });
});

describe('withSoftwareAdaptersHidden', () => {
  it("sets the variables while loads run, overlapping or not, and gives the user's values back after the last", async () => {
    const name = 'VK_LOADER_DRIVERS_DISABLE';
    process.env[name] = '*mine*';
    let releaseFirst!: () => void;
    const first = withSoftwareAdaptersHidden(() => new Promise<void>((resolve) => (releaseFirst = resolve)));
    const seen: Array<string | undefined> = [process.env[name]];
    // A probe started meanwhile (rmbg doctor, an explicit gpu engine) sees the user's value, not ours.
    seen.push(userEnvironment()[name]);
    await withSoftwareAdaptersHidden(async () => seen.push(process.env[name]));
    seen.push(process.env[name]);
    releaseFirst();
    await first;
    seen.push(process.env[name]);
    expect(seen).toEqual([
      '*mine*,*lvp*,*swiftshader*',
      '*mine*',
      '*mine*,*lvp*,*swiftshader*',
      '*mine*,*lvp*,*swiftshader*',
      '*mine*',
    ]);
    delete process.env[name];
  });
});

describe('gpuFixHint: advice for the situation, never a software driver', () => {
  const on = (situation: Partial<GpuSituation>) =>
    gpuFixHint({
      platform: 'linux',
      situation: { container: false, wsl: false, mig: false, vulkanVariables: [], ...situation },
    });

  it('in a container: the driver comes from the host (NVIDIA_DRIVER_CAPABILITIES with graphics), only the loader in the image', () => {
    const advice = on({ container: true });
    expect(advice).toContain('inside a container the Vulkan driver comes from the host');
    expect(advice).toContain('NVIDIA_DRIVER_CAPABILITIES=graphics,compute,utility');
    expect(advice).toContain('apt-get install --no-install-recommends libvulkan1');
    expect(advice).not.toContain('libnvidia-gl');
  });

  it("on WSL2: Mesa's dzn over Direct3D 12, and no Linux NVIDIA driver", () => {
    const advice = on({ wsl: true, container: true });
    expect(advice).toContain("Mesa's Dozen driver (dzn");
    expect(advice).toContain('do not install a Linux NVIDIA driver inside WSL');
    expect(advice).not.toContain('NVIDIA_DRIVER_CAPABILITIES');
  });

  it('on a MIG partition: no Vulkan there; and the Vulkan variables the user set are shown', () => {
    const advice = on({ mig: true, container: true, vulkanVariables: ['VK_ICD_FILENAMES=/x/nvidia_icd.json'] });
    expect(advice).toMatch(/^a MIG partition of an NVIDIA GPU has no graphics, so no Vulkan/);
    expect(advice).toContain('check the Vulkan variables you set (VK_ICD_FILENAMES=/x/nvidia_icd.json)');
  });

  it('on a plain Linux machine: the loader alone (its Recommends would bring lavapipe) and the GPU vendor driver', () => {
    const advice = on({});
    expect(advice).toContain('apt-get install --no-install-recommends libvulkan1');
    expect(advice).not.toMatch(/apt-get install libvulkan1|lavapipe|swiftshader/i);
  });

  it('on Windows: the vendor driver, and that WARP is not used', () => {
    expect(gpuFixHint({ platform: 'win32' })).toContain("Microsoft's software adapter (WARP), which rmbg does not use");
  });
});

describe('probeGpu on this machine (lavapipe, no GPU)', () => {
  it('finds the software adapter when it is allowed, and no adapter when it is hidden, as auto asks', async () => {
    const [allowed, hidden] = await Promise.all([probeGpu('allowed'), probeGpu('hidden')]);
    // The adapter is named as its driver reports it, and known as software by that name.
    expect(allowed).toMatchObject({ ok: true, software: true, adapters: [expect.stringMatching(/^llvmpipe /)] });
    expect(hidden).toMatchObject({ ok: false, error: 'Failed to get a WebGPU adapter: No supported adapters' });
  });
});
