// Hiding the software Vulkan drivers from the loader (what keeps --device auto off lavapipe and SwiftShader):
// the variables it sets for new and old loaders, and that overlapping loads give the user's own values back.

import { describe, expect, it } from 'vitest';
import {
  softwareDriversHidden,
  userEnvironment,
  withSoftwareAdaptersHidden,
  type GpuEnvironment,
} from '../../../src/engine/gpu-environment.js';
import { probeGpu } from '../../../src/engine/gpu-probe.js';

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

describe('probeGpu on this machine (lavapipe, no GPU)', () => {
  it('finds the software adapter when it is allowed, and no adapter when it is hidden, as auto asks', async () => {
    const [allowed, hidden] = await Promise.all([probeGpu('allowed'), probeGpu('hidden')]);
    expect(allowed).toMatchObject({ ok: true });
    expect(hidden).toMatchObject({ ok: false, error: 'Failed to get a WebGPU adapter: No supported adapters' });
  });
});
