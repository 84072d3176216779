// Where the model runs, decided from facts alone: `decideDevice` is pure. It either answers, or asks for the next
// fact it needs, which place-session.ts gathers (reading the verdict file, asking the binding, claiming the GPU,
// probing it in a child process, loading and timing sessions) before asking again. Its rules, first match wins:
//
//  1. device 'cpu' asked for: the CPU.
//  2. auto, no GPU device here (Linux without a GPU device node) and no software opt-in: the CPU.
//  3. this onnxruntime-node build has no WebGPU: auto the CPU; gpu unavailable.
//  4. another copy of rmbg in this process holds the GPU (gpu-claim.ts): auto the CPU; gpu unavailable.
//  5. auto, remembered that the CPU is faster here for this model (gpu-verdict.ts): the CPU.
//  6. auto, a job of fewer photos than the GPU's slower start pays for (2 without a verdict): the CPU.
//  7. the WebGPU probe (skipped with a verdict) finds no working adapter: auto the CPU; gpu unavailable.
//  8. the only adapter is a software one, without the opt-in: auto the CPU; gpu unavailable.
//  9. the model fails to load, to run or to be measured on the GPU: auto the CPU; gpu unavailable.
// 10. auto, remembered that the GPU is faster: the GPU.
// 11. auto, measured now (one blank run on each device, then remembered): the faster, a tie to the CPU.
// 12. otherwise (device 'gpu'): the GPU.
//
// gpu never falls back: where auto takes the CPU, gpu is 'unavailable', its reason the error's message.

import { SOFTWARE_GPU_OPT_IN, type Device } from '../../api/device.js';
import {
  describeEnvironment,
  gpuErrorText,
  gpuFixHint,
  mayHaveHardwareGpu,
  type GpuEnvironment,
} from '../gpu/gpu-environment.js';
import type { GpuProbe } from '../gpu/gpu-probe.js';
import {
  describeEstimate,
  describeVerdict,
  estimateJob,
  fewestPhotosForGpu,
  type GpuVerdict,
} from '../gpu/gpu-verdict.js';

/** The facts the rules read. The first six are known at the start; the rest are learnt when a rule asks. */
export interface DeviceFacts {
  requested: Device;
  /** The model's name, for the messages. */
  model: string;
  /** What the machine offers WebGPU (gpu-environment.ts). */
  environment: GpuEnvironment;
  /** A software adapter counts as a GPU (tests: RMBG_TEST_SOFTWARE_GPU=1). */
  softwareGpu: boolean;
  /** Where auto's verdicts are remembered, for the reasons. */
  verdictFile: string;
  /** This process's platform and architecture ("linux x64"): the binding's build. */
  nodePlatform: string;
  /** 'webgpu': whether this onnxruntime-node build has WebGPU. */
  webGpu?: boolean;
  /** 'claim': why the GPU is not free, or false once this placement holds it. */
  gpuBusy?: string | false;
  /** 'verdict' (auto only): the verdict of an earlier start, null for none. */
  verdict?: GpuVerdict | null;
  /** 'photos' (auto only): the job's number of photos, null when not known (a server, a watch). */
  photos?: number | null;
  /** 'probe': what the WebGPU probe found. */
  probe?: GpuProbe;
  /** 'gpu-session': the model loaded on the GPU and ran once. */
  gpuLoaded?: boolean;
  /** 'measure' (auto only): the GPU against the CPU, measured now. */
  measured?: GpuVerdict;
  /** Why the model's load, first run or measurement on the GPU failed. */
  gpuFailure?: string;
}

/** The fact a rule needs next, by name. */
export type FactName = 'webgpu' | 'claim' | 'verdict' | 'photos' | 'probe' | 'gpu-session' | 'measure';

export type DeviceDecision =
  | { device: 'cpu' | 'gpu'; reason: string }
  /** device 'gpu' cannot be had here: `reason` is the error's message. */
  | { device: 'unavailable'; reason: string }
  | { ask: FactName };

/** Whether auto hides software adapters (lavapipe, SwiftShader) from the probe and the session: they are far
 * slower than the CPU provider. */
export function hidesSoftwareAdapters(facts: Pick<DeviceFacts, 'requested' | 'softwareGpu'>): boolean {
  return facts.requested === 'auto' && !facts.softwareGpu;
}

/** The device the rules in this file's header choose for `facts`, or the fact they need next. */
export function decideDevice(facts: DeviceFacts): DeviceDecision {
  const { requested, model, environment, softwareGpu } = facts;
  const auto = requested === 'auto';
  const cpu = (reason: string): DeviceDecision => ({ device: 'cpu', reason });
  const gpu = (reason: string): DeviceDecision => ({ device: 'gpu', reason });
  /** auto falls back to the CPU; gpu cannot be had. */
  const fallBack = (autoReason: string, gpuMessage: string): DeviceDecision =>
    auto ? cpu(autoReason) : { device: 'unavailable', reason: gpuMessage };
  const remembered = (verdict: GpuVerdict) => `${describeVerdict(verdict)}; remembered in ${facts.verdictFile}`;

  if (requested === 'cpu') return cpu("device 'cpu' was asked for"); // 1
  if (auto && !mayHaveHardwareGpu(environment) && !softwareGpu) {
    return cpu(
      `no GPU device found (${describeEnvironment(environment)}); software adapters are never used by auto`, // 2
    );
  }
  if (facts.webGpu === undefined) return { ask: 'webgpu' };
  if (!facts.webGpu) {
    const why = `this onnxruntime-node build (${facts.nodePlatform}) has no WebGPU`; // 3
    return fallBack(why, `cannot run model ${model} on the GPU: ${why}; use device 'cpu'.`);
  }
  if (facts.gpuBusy === undefined) return { ask: 'claim' };
  if (facts.gpuBusy !== false) {
    return fallBack(
      `the GPU is not free: ${facts.gpuBusy}`, // 4
      `cannot run model ${model} on the GPU: ${facts.gpuBusy}. ` +
        "Use one rmbg instance per process for the GPU (share it between threads by messages), or device 'cpu' here.",
    );
  }
  if (auto && facts.verdict === undefined) return { ask: 'verdict' };
  const verdict = facts.verdict ?? undefined;
  if (verdict?.device === 'cpu') return cpu(`the CPU is faster here for this model (${remembered(verdict)})`); // 5
  const fewest = verdict ? fewestPhotosForGpu(verdict) : 2;
  if (auto && fewest > 1) {
    if (facts.photos === undefined) return { ask: 'photos' };
    if (facts.photos !== null && facts.photos < fewest) return cpu(tooSmallForGpu(verdict, facts.photos, facts)); // 6
  }
  if (!verdict) {
    if (facts.probe === undefined) return { ask: 'probe' };
    if (!facts.probe.ok) {
      const failure = gpuErrorText(new Error(facts.probe.error ?? 'the GPU probe failed')); // 7
      return fallBack(gpuFailed(failure), noWorkingGpu(model, failure, environment, facts.probe));
    }
  }
  const adapters = facts.probe?.adapters.join(', ') ?? '';
  if (facts.probe?.software && !softwareGpu) {
    return fallBack(
      `the only WebGPU adapter is a software one (${adapters}), slower than the CPU; software adapters are never used by auto`, // 8
      softwareAdapterOnly(model, adapters, environment),
    );
  }
  if (facts.gpuFailure !== undefined)
    return fallBack(gpuFailed(facts.gpuFailure), modelFailedOnGpu(model, facts.gpuFailure)); // 9
  if (!facts.gpuLoaded) return { ask: 'gpu-session' };
  if (verdict) return gpu(`the GPU is faster here for this model (${remembered(verdict)})`); // 10
  if (auto) {
    if (facts.measured === undefined) return { ask: 'measure' };
    const measured = describeVerdict(facts.measured); // 11
    return facts.measured.device === 'cpu'
      ? cpu(`the CPU is faster here for this model (${measured})`)
      : gpu(`a hardware adapter works${adapters && ` (${adapters})`} and is faster than the CPU (${measured})`);
  }
  return gpu(
    facts.probe?.software // 12
      ? `a software adapter (${adapters}), allowed by ${SOFTWARE_GPU_OPT_IN}=1 for testing`
      : `device 'gpu' was asked for${adapters && ` (${adapters})`}`,
  );
}

function gpuFailed(failure: string): string {
  return `the GPU failed (${failure}); 'rmbg doctor' tells why`;
}

/** Why auto runs a job of `photos`, too small for the GPU's slower start, on the CPU. */
function tooSmallForGpu(known: GpuVerdict | undefined, photos: number, { verdictFile }: DeviceFacts): string {
  if (!known)
    return 'a job of one photo ends sooner on the CPU than the GPU could be measured (a job of more photos measures it)';
  const estimate = estimateJob(known, photos);
  return (
    `this job ends sooner on the CPU, as the GPU starts slower (${describeEstimate(estimate)}; from ` +
    `${describeVerdict(known)}, remembered in ${verdictFile})`
  );
}

/** WebGPU works, but only on a software adapter: never "the GPU" (it is slower than the CPU provider). */
function softwareAdapterOnly(model: string, adapters: string, environment: GpuEnvironment): string {
  return (
    `cannot run model ${model} on the GPU: the only WebGPU adapter here is a software one (${adapters}), ` +
    `which runs on the CPU and is slower than device 'cpu'. Seen: ${describeEnvironment(environment)}. ` +
    `To fix: ${gpuFixHint(environment)}; 'rmbg doctor' checks it. Device 'auto' or 'cpu' runs on the CPU.`
  );
}

/** WebGPU itself fails: what was seen, what the loader said, how to fix it on this OS. */
function noWorkingGpu(model: string, failure: string, environment: GpuEnvironment, probe: GpuProbe): string {
  const said = probe.log.length
    ? ` The Vulkan loader and Dawn said: ${probe.log
        .slice(0, 4)
        .map((line) => line.trim())
        .join(' | ')}.`
    : '';
  return (
    `cannot run model ${model} on the GPU: WebGPU failed: ${failure}. Seen: ${describeEnvironment(environment)}.` +
    `${said} To fix: ${gpuFixHint(environment)}; 'rmbg doctor' checks it. Device 'auto' or 'cpu' runs on the CPU.`
  );
}

/** WebGPU works (a one-node model ran on it), but this model does not: nothing to install. */
function modelFailedOnGpu(model: string, failure: string): string {
  return (
    `cannot run model ${model} on the GPU: the GPU works (a one-node test model ran on it), ` +
    `but this model failed on it: ${failure}. Device 'auto' or 'cpu' runs it on the CPU.`
  );
}
