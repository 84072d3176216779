// Where the model runs: the CPU, or the GPU through WebGPU when it works here, is a hardware adapter and (auto) is
// faster than the CPU. gpu never falls back; auto falls back to the CPU and says why.

import { RmbgError } from '../../api/errors.js';
import { DEFAULT_DEVICE, SOFTWARE_GPU_OPT_IN, type Device, type DeviceReport } from '../../api/device.js';
import { LIMITS } from '../../api/limits.js';
import type { ResolvedModel } from '../model/model-registry.js';
import type { SessionOptions } from '../model/model-session.js';
import { WorkerSession, type WorkerLimits } from '../runtime/inference-worker.js';
import { concurrencyFor } from '../runtime/device-report.js';
import { claimGpu, releaseGpu } from './gpu-claim.js';
import {
  describeEnvironment,
  gpuEnvironment,
  gpuErrorText,
  gpuFixHint,
  mayHaveHardwareGpu,
  withSoftwareAdaptersHidden,
  type GpuEnvironment,
} from './gpu-environment.js';
import { bindingHasWebGpu, probeGpu, type GpuProbe } from './gpu-probe.js';
import {
  describeEstimate,
  describeVerdict,
  estimateJob,
  fewestPhotosForGpu,
  readVerdict,
  saveVerdict,
  verdictFile,
  verdictKey,
  type GpuVerdict,
} from './gpu-verdict.js';

/** What placing a session takes: the session's own settings and where it may run. */
export interface PlacementOptions extends Omit<SessionOptions, 'provider'>, WorkerLimits {
  /** Where the model runs (api/device.ts). Default auto. */
  device?: Device;
  /** What the machine offers WebGPU; default: read from it (gpu-environment.ts). Tests give one with a GPU device. */
  environment?: GpuEnvironment;
  /** For tests: a software adapter counts as a GPU. Default: whether RMBG_TEST_SOFTWARE_GPU is 1 (api/device.ts). */
  softwareGpu?: boolean;
}

/** What the caller knows of the job the session is for. */
export interface JobSize {
  /** Its number of photos, once they are found (`rmbg remove`): auto weighs each device's start against it, as a
   * GPU starts slower. Absent or undefined: as many as come (a server, a watch, a library engine). */
  photos?: Promise<number | undefined>;
}

/** A session and where it runs. */
export interface PlacedSession {
  session: WorkerSession;
  device: DeviceReport;
}

/**
 * How long the GPU's first run may take before the GPU is given up on: the run time limit itself (--run-timeout,
 * rmbg serve's --processing-timeout), as that run is a run, which the worker's own limit holds it to anyway.
 * Compiling the shaders takes ~1 s on hardware, but a big model's first run on a slow adapter may take minutes.
 */
function firstGpuRunLimitMs(options: PlacementOptions): number {
  return options.runTimeoutMs ?? LIMITS.runTimeoutMs;
}

/**
 * The model on the GPU (WebGPU), with one run on a blank tensor: that run compiles the shaders (so the first
 * photo is not slower) and shows a GPU that fails on its first run before any photo depends on it. A run that
 * outlives `firstRunLimitMs` is left behind: it holds the GPU queue, but a CPU session does not use it.
 */
async function gpuSession(
  model: ResolvedModel,
  options: PlacementOptions,
  verified: Promise<unknown>,
  firstRunLimitMs: number,
): Promise<WorkerSession> {
  const session = await WorkerSession.load(model, { ...options, provider: 'webgpu' }, verified, options);
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(`the first run on the GPU did not finish within the run time limit (${firstRunLimitMs / 1000} s)`),
        ),
      firstRunLimitMs,
    );
  });
  const firstRun = session.runBlank();
  try {
    await Promise.race([firstRun, limit]);
    return session;
  } catch (error) {
    // A run that failed has given its turn back; one still running keeps it, and release would wait behind it.
    void firstRun
      .then(
        () => session.release(),
        () => session.release(),
      )
      .catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Places the model on the device asked for: gpu never falls back; auto falls back to the CPU, saying why. */
export async function placeSession(
  model: ResolvedModel,
  options: PlacementOptions,
  verified: Promise<unknown>,
  { photos }: JobSize = {},
): Promise<PlacedSession> {
  const requested = options.device ?? DEFAULT_DEVICE;
  const onCpu = async (reason: string): Promise<PlacedSession> => ({
    session: await WorkerSession.load(model, { ...options, provider: 'cpu' }, verified, options),
    device: { requested, device: 'cpu', reason, concurrency: concurrencyFor('cpu') },
  });
  if (requested === 'cpu') return onCpu("device 'cpu' was asked for");
  const environment = options.environment ?? gpuEnvironment();
  const hardware = mayHaveHardwareGpu(environment);
  const softwareGpu = options.softwareGpu ?? process.env[SOFTWARE_GPU_OPT_IN] === '1';
  if (requested === 'auto' && !hardware && !softwareGpu)
    return onCpu(`no GPU device found (${describeEnvironment(environment)}); software adapters are never used by auto`);
  if (!(await bindingHasWebGpu())) {
    const why = `this onnxruntime-node build (${process.platform} ${process.arch}) has no WebGPU`;
    if (requested === 'auto') return onCpu(why);
    throw new RmbgError('device_unavailable', `cannot run model ${model.name} on the GPU: ${why}; use device 'cpu'.`);
  }
  // One GPU user per process (gpu-claim.ts): held while placing, so the probe is not paid for a GPU held elsewhere.
  const refused = await claimGpu();
  if (refused !== undefined) {
    if (requested === 'auto') return onCpu(`the GPU is not free: ${refused}`);
    throw new RmbgError(
      'device_unavailable',
      `cannot run model ${model.name} on the GPU: ${refused}. ` +
        "Use one rmbg instance per process for the GPU (share it between threads by messages), or device 'cpu' here.",
    );
  }
  try {
    return await placeOnGpu(model, options, verified, { environment, softwareGpu, photos }, onCpu);
  } finally {
    releaseGpu(); // the GPU session, if any, holds its own claim
  }
}

async function placeOnGpu(
  model: ResolvedModel,
  options: PlacementOptions,
  verified: Promise<unknown>,
  { environment, softwareGpu, photos }: { environment: GpuEnvironment; softwareGpu: boolean } & JobSize,
  onCpu: (reason: string) => Promise<PlacedSession>,
): Promise<PlacedSession> {
  const requested = options.device ?? DEFAULT_DEVICE;
  // auto never takes a software adapter (lavapipe, SwiftShader): it is far slower than the CPU provider. Hidden
  // from the Vulkan loader, and any adapter offered is checked by the name it reports (the other backends).
  const software = requested === 'auto' && !softwareGpu ? 'hidden' : 'allowed';
  // auto's verdict of an earlier start (gpu-verdict.ts): the CPU was faster, or the GPU worked and was faster.
  const verdictAt = requested === 'auto' ? verdictKey(environment, model) : undefined;
  const known = verdictAt === undefined ? undefined : readVerdict(verdictAt);
  if (known?.device === 'cpu')
    return onCpu(`the CPU is faster here for this model (${describeVerdict(known)}; remembered in ${verdictFile()})`);
  // Without a verdict, a job of one photo is not worth measuring the GPU for (a start on both devices). The job's
  // size is awaited only where it can change the answer: the photos are being found meanwhile.
  const fewest = known ? fewestPhotosForGpu(known) : 2;
  const count = requested === 'auto' && fewest > 1 ? await photos : undefined;
  if (count !== undefined && count < fewest) return onCpu(tooSmallForGpu(known, count));
  // Asked of a child process first: without a working adapter the Vulkan loader and Dawn print to this
  // process's stderr, and a failed request for an adapter fails every later one in the process.
  const probe: GpuProbe = known
    ? { ok: true, adapters: [], software: false, log: [] }
    : await probeGpu(software, { environment });
  try {
    if (!probe.ok) throw new Error(probe.error ?? 'the GPU probe failed');
    const adapters = probe.adapters.join(', ');
    if (probe.software && !softwareGpu) {
      if (requested === 'auto')
        return await onCpu(
          `the only WebGPU adapter is a software one (${adapters}), slower than the CPU; software adapters are never used by auto`,
        );
      throw new RmbgError('device_unavailable', softwareAdapterOnly(model, adapters, environment));
    }
    const load = () => gpuSession(model, options, verified, firstGpuRunLimitMs(options));
    // Measuring: the weights' first check (a hash) is not counted in the GPU's start, as later starts skip it.
    if (verdictAt !== undefined && !known) await verified.catch(() => undefined);
    const loadStarted = performance.now();
    const session = await (software === 'hidden' ? withSoftwareAdaptersHidden(load, environment) : load());
    const gpuStartMs = Math.round(performance.now() - loadStarted);
    const onGpu = (reason: string): PlacedSession => ({
      session,
      device: { requested, device: 'gpu', reason, concurrency: concurrencyFor('gpu') },
    });
    if (known) {
      return onGpu(`the GPU is faster here for this model (${describeVerdict(known)}; remembered in ${verdictFile()})`);
    }
    if (verdictAt !== undefined) {
      const verdict = await measureVerdict(session, gpuStartMs, onCpu);
      saveVerdict(verdictAt, verdict.verdict);
      if (verdict.verdict.device === 'cpu') {
        await session.release();
        return verdict.cpu;
      }
      await verdict.cpu.session.release();
      return onGpu(
        `a hardware adapter works${adapters && ` (${adapters})`} and is faster than the CPU (${describeVerdict(verdict.verdict)})`,
      );
    }
    return onGpu(
      probe.software
        ? `a software adapter (${adapters}), allowed by ${SOFTWARE_GPU_OPT_IN}=1 for testing`
        : requested === 'auto'
          ? `a hardware adapter works${adapters && ` (${adapters})`}`
          : `device 'gpu' was asked for${adapters && ` (${adapters})`}`,
    );
  } catch (error) {
    if (error instanceof RmbgError && error.code === 'device_unavailable') throw error;
    await verified; // a corrupt or missing model file is reported as such, not as a GPU failure
    const failure = gpuErrorText(error);
    if (requested === 'auto') return onCpu(`the GPU failed (${failure}); 'rmbg doctor' tells why`);
    throw new RmbgError(
      'device_unavailable',
      probe.ok ? modelFailedOnGpu(model, failure) : noWorkingGpu(model, failure, environment, probe),
      { cause: error },
    );
  }
}

/** Why auto runs a job of `photos`, too small for the GPU's slower start, on the CPU. */
function tooSmallForGpu(known: GpuVerdict | undefined, photos: number): string {
  if (!known)
    return 'a job of one photo ends sooner on the CPU than the GPU could be measured (a job of more photos measures it)';
  const estimate = estimateJob(known, photos);
  return `this job ends sooner on the CPU, as the GPU starts slower (${describeEstimate(estimate)}; from ${describeVerdict(known)}, remembered in ${verdictFile()})`;
}

/** auto's measurement: one blank run on the GPU (its first run is done) against the CPU provider's second, and each
 * device's start up to its first run's answer (`gpuStartMs`: the GPU session's, measured by the caller). */
async function measureVerdict(
  gpu: WorkerSession,
  gpuStartMs: number,
  onCpu: (reason: string) => Promise<PlacedSession>,
): Promise<{ verdict: GpuVerdict; cpu: PlacedSession }> {
  const timed = async (session: WorkerSession) => {
    const started = performance.now();
    await session.runBlank();
    return Math.round(performance.now() - started);
  };
  const gpuMs = await timed(gpu);
  const cpuStarted = performance.now();
  const cpu = await onCpu('');
  await timed(cpu.session); // the CPU's first run, as the GPU's was
  const cpuStartMs = Math.round(performance.now() - cpuStarted);
  const cpuMs = await timed(cpu.session);
  const verdict: GpuVerdict = {
    device: gpuMs < cpuMs ? 'gpu' : 'cpu', // a tie goes to the CPU, which starts sooner
    gpuMs,
    cpuMs,
    gpuStartMs,
    cpuStartMs,
    at: new Date().toISOString(),
  };
  const reason = `the CPU is faster here for this model (${describeVerdict(verdict)})`;
  return { verdict, cpu: { ...cpu, device: { ...cpu.device, reason } } };
}

/** WebGPU works, but only on a software adapter: never "the GPU" (it is slower than the CPU provider). */
function softwareAdapterOnly(model: ResolvedModel, adapters: string, environment: GpuEnvironment): string {
  return (
    `cannot run model ${model.name} on the GPU: the only WebGPU adapter here is a software one (${adapters}), ` +
    `which runs on the CPU and is slower than device 'cpu'. Seen: ${describeEnvironment(environment)}. ` +
    `To fix: ${gpuFixHint(environment)}; 'rmbg doctor' checks it. Device 'auto' or 'cpu' runs on the CPU.`
  );
}

/** WebGPU itself fails: what was seen, what the loader said, how to fix it on this OS. */
function noWorkingGpu(model: ResolvedModel, failure: string, environment: GpuEnvironment, probe: GpuProbe): string {
  const said = probe.log.length
    ? ` The Vulkan loader and Dawn said: ${probe.log
        .slice(0, 4)
        .map((line) => line.trim())
        .join(' | ')}.`
    : '';
  return (
    `cannot run model ${model.name} on the GPU: WebGPU failed: ${failure}. Seen: ${describeEnvironment(environment)}.` +
    `${said} To fix: ${gpuFixHint(environment)}; 'rmbg doctor' checks it. Device 'auto' or 'cpu' runs on the CPU.`
  );
}

/** WebGPU works (a one-node model ran on it), but this model does not: nothing to install. */
function modelFailedOnGpu(model: ResolvedModel, failure: string): string {
  return (
    `cannot run model ${model.name} on the GPU: the GPU works (a one-node test model ran on it), ` +
    `but this model failed on it: ${failure}. Device 'auto' or 'cpu' runs it on the CPU.`
  );
}
