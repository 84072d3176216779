// auto's and gpu's decision, rule by rule (decide-device.ts' header): each row gives the facts known when the rule
// answers and what it answers, the device and the words a user reads on stderr, or the fact the rules ask for next.

import { describe, expect, it } from 'vitest';
import type { GpuEnvironment } from '../../../../src/engine/gpu/gpu-environment.js';
import type { GpuProbe } from '../../../../src/engine/gpu/gpu-probe.js';
import type { GpuVerdict } from '../../../../src/engine/gpu/gpu-verdict.js';
import { type DeviceDecision, type DeviceFacts, decideDevice } from '../../../../src/engine/placement/decide-device.js';

const WITH_GPU: GpuEnvironment = {
  platform: 'linux',
  devices: ['/dev/dri/renderD128 (NVIDIA)'],
  drivers: [{ manifest: 'nvidia_icd.json', path: '/usr/share/vulkan/icd.d/nvidia_icd.json', software: false }],
  loader: true,
};
const NO_GPU: GpuEnvironment = {
  ...WITH_GPU,
  devices: [],
  drivers: [{ manifest: 'lvp_icd.json', path: '/usr/share/vulkan/icd.d/lvp_icd.json', software: true }],
};
const HARDWARE: GpuProbe = { ok: true, adapters: ['NVIDIA L4'], software: false, log: [] };
const SOFTWARE: GpuProbe = { ok: true, adapters: ['llvmpipe (LLVM 15.0.6, 256 bits)'], software: true, log: [] };
const BROKEN: GpuProbe = {
  ok: false,
  error: 'Failed to get a WebGPU adapter',
  adapters: [],
  software: false,
  log: ['ERROR: loader_scan_for_direct_drivers: none'],
};
/** The GPU measured faster, with a start 600 ms slower and 100 ms saved per photo: worth it from 6 photos. */
const GPU_FASTER: GpuVerdict = { device: 'gpu', gpuMs: 50, cpuMs: 150, gpuStartMs: 900, cpuStartMs: 300, at: 'then' };
const CPU_FASTER: GpuVerdict = { ...GPU_FASTER, device: 'cpu', gpuMs: 200 };

/** auto on a machine with a GPU, every fact up to the GPU session learnt and fine. */
const AUTO: DeviceFacts = {
  requested: 'auto',
  model: 'isnet',
  environment: WITH_GPU,
  softwareGpu: false,
  verdictFile: '/cache/gpu-verdicts.json',
  nodePlatform: 'linux x64',
  webGpu: true,
  gpuBusy: false,
  verdict: null,
  photos: null,
  probe: HARDWARE,
  gpuLoaded: true,
};
const GPU: DeviceFacts = { ...AUTO, requested: 'gpu', verdict: undefined, photos: undefined };

type Row = [rule: string, facts: Partial<DeviceFacts>, expected: DeviceDecision | RegExp];

const AUTO_ROWS: Row[] = [
  [
    '1 cpu asked for',
    { requested: 'cpu', environment: NO_GPU, webGpu: false },
    { device: 'cpu', reason: "device 'cpu' was asked for" },
  ],
  [
    '2 no GPU device',
    { environment: NO_GPU, webGpu: undefined },
    /^no GPU device found \(GPU devices: none;.*software adapters are never used by auto$/,
  ],
  [
    '2 no GPU device, software opted in: asks on',
    { environment: NO_GPU, softwareGpu: true, webGpu: undefined },
    /ask:webgpu/,
  ],
  ['3 binding unknown', { webGpu: undefined, gpuBusy: undefined }, /ask:webgpu/],
  ['3 binding without WebGPU', { webGpu: false }, /^this onnxruntime-node build \(linux x64\) has no WebGPU$/],
  ['4 claim unknown', { gpuBusy: undefined }, /ask:claim/],
  [
    '4 GPU held elsewhere',
    { gpuBusy: 'held by another copy of rmbg' },
    /^the GPU is not free: held by another copy of rmbg$/,
  ],
  ['5 verdict unknown', { verdict: undefined }, /ask:verdict/],
  [
    '5 CPU remembered faster',
    { verdict: CPU_FASTER },
    /^the CPU is faster here for this model \(.*remembered in \/cache\/gpu-verdicts.json\)$/,
  ],
  ['6 photos unknown', { photos: undefined }, /ask:photos/],
  ['6 one photo, no verdict', { photos: 1 }, /^a job of one photo ends sooner on the CPU/],
  [
    '6 two photos, no verdict: measured',
    { photos: 2, measured: GPU_FASTER },
    /^a hardware adapter works \(NVIDIA L4\) and is faster/,
  ],
  [
    '6 five photos, below the verdict’s six',
    { verdict: GPU_FASTER, photos: 5 },
    /^this job ends sooner on the CPU, as the GPU starts slower/,
  ],
  ['6 six photos: the GPU', { verdict: GPU_FASTER, photos: 6 }, /^the GPU is faster here for this model/],
  ['7 probe unknown', { probe: undefined }, /ask:probe/],
  ['7 probe skipped with a verdict', { verdict: GPU_FASTER, probe: undefined, photos: 10 }, /^the GPU is faster here/],
  [
    '7 no working adapter',
    { probe: BROKEN },
    /^the GPU failed \(Failed to get a WebGPU adapter\); 'rmbg doctor' tells why$/,
  ],
  [
    '8 software adapter only',
    { probe: SOFTWARE },
    /^the only WebGPU adapter is a software one \(llvmpipe.*never used by auto$/,
  ],
  [
    '8 software adapter, opted in: measured',
    { probe: SOFTWARE, softwareGpu: true, measured: CPU_FASTER },
    /^the CPU is faster here for this model \(GPU 200 ms/,
  ],
  ['9 session not loaded yet', { gpuLoaded: undefined }, /ask:gpu-session/],
  [
    '9 model fails on the GPU',
    { gpuLoaded: undefined, gpuFailure: 'Non-zero status code' },
    /^the GPU failed \(Non-zero status code\)/,
  ],
  ['9 measurement fails', { gpuFailure: 'device lost' }, /^the GPU failed \(device lost\)/],
  [
    '10 GPU remembered faster',
    { verdict: GPU_FASTER, photos: null },
    /^the GPU is faster here for this model \(.*remembered in/,
  ],
  ['11 not measured yet', {}, /ask:measure/],
  [
    '11 measured: the GPU',
    { measured: GPU_FASTER },
    /^a hardware adapter works \(NVIDIA L4\) and is faster than the CPU \(/,
  ],
  ['11 measured: the CPU', { measured: CPU_FASTER }, /^the CPU is faster here for this model \(GPU 200 ms/],
];

const GPU_ROWS: Row[] = [
  ['2 no GPU device: asks on', { environment: NO_GPU, webGpu: undefined }, /ask:webgpu/],
  [
    '3 binding without WebGPU',
    { webGpu: false },
    /^cannot run model isnet on the GPU: this onnxruntime-node build \(linux x64\) has no WebGPU; use device 'cpu'.$/,
  ],
  [
    '4 GPU held elsewhere',
    { gpuBusy: 'held by another copy of rmbg' },
    /^cannot run model isnet on the GPU: held by another copy of rmbg. Use one rmbg instance per process/,
  ],
  ['5-6 no verdict, no photo count asked', { gpuLoaded: undefined }, /ask:gpu-session/],
  ['7 probe unknown', { probe: undefined }, /ask:probe/],
  [
    '7 no working adapter',
    { probe: BROKEN },
    /^cannot run model isnet on the GPU: WebGPU failed: Failed to get a WebGPU adapter\. Seen: .*The Vulkan loader and Dawn said: ERROR: loader_scan/,
  ],
  [
    '8 software adapter only',
    { probe: SOFTWARE },
    /^cannot run model isnet on the GPU: the only WebGPU adapter here is a software one \(llvmpipe/,
  ],
  [
    '8 software adapter, opted in',
    { probe: SOFTWARE, softwareGpu: true },
    /^a software adapter \(llvmpipe.*\), allowed by RMBG_TEST_SOFTWARE_GPU=1 for testing$/,
  ],
  [
    '9 model fails on the GPU',
    { gpuFailure: 'Non-zero status code' },
    /^cannot run model isnet on the GPU: the GPU works .* but this model failed on it: Non-zero status code\./,
  ],
  ['12 the GPU', {}, /^device 'gpu' was asked for \(NVIDIA L4\)$/],
];

/** A decision as one line: `ask:<fact>` or the reason, so a row's pattern reads like what it matches. */
function shown(decision: DeviceDecision): { device?: string; reason: string } {
  return 'ask' in decision ? { reason: `ask:${decision.ask}` } : decision;
}

function check(base: DeviceFacts, [, facts, expected]: Row): void {
  const decision = decideDevice({ ...base, ...facts });
  if (expected instanceof RegExp) {
    expect(shown(decision).reason).toMatch(expected);
    return;
  }
  expect(decision).toEqual(expected);
}

describe('decideDevice', () => {
  it.each(AUTO_ROWS)('auto, rule %s', (...row) => check(AUTO, row));
  it.each(GPU_ROWS)('gpu, rule %s', (...row) => check(GPU, row));

  it('falls back for auto exactly where gpu is unavailable, and gpu never falls back to the CPU', () => {
    for (const [, facts] of GPU_ROWS) {
      const decision = decideDevice({ ...GPU, ...facts });
      if ('device' in decision) expect(decision.device).not.toBe('cpu');
      if ('device' in decision && decision.device === 'unavailable')
        expect(decideDevice({ ...AUTO, ...facts, verdict: null, photos: null })).toMatchObject({ device: 'cpu' });
    }
  });

  it('names the device a decision chose: cpu, gpu or unavailable', () => {
    expect(decideDevice({ ...AUTO, measured: GPU_FASTER })).toMatchObject({ device: 'gpu' });
    expect(decideDevice({ ...AUTO, photos: 1 })).toMatchObject({ device: 'cpu' });
    expect(decideDevice({ ...GPU, webGpu: false })).toMatchObject({ device: 'unavailable' });
  });
});
