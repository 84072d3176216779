// Where the model runs: the CPU, or the GPU through WebGPU when it works here, is a hardware adapter and (auto) is
// faster than the CPU. gpu never falls back; auto falls back to the CPU and says why. The rules are decide-device.ts';
// this file gathers the facts they ask for (the I/O) and makes the session they choose. Above gpu/ (what the machine
// offers) and runtime/ (the session on its worker), which do not import each other.

import { RmbgError } from '../../api/errors.js';
import { DEFAULT_DEVICE, SOFTWARE_GPU_OPT_IN, type Device, type DeviceReport } from '../../api/device.js';
import { LIMITS } from '../../api/limits.js';
import type { ResolvedModel } from '../model/model-registry.js';
import type { SessionOptions } from '../model/model-session.js';
import { WorkerSession, type WorkerLimits } from '../runtime/inference-worker.js';
import { concurrencyFor } from '../runtime/device-report.js';
import { claimGpu, releaseGpu } from '../runtime/gpu-claim.js';
import {
  gpuEnvironment,
  gpuErrorText,
  withSoftwareAdaptersHidden,
  type GpuEnvironment,
} from '../gpu/gpu-environment.js';
import { bindingHasWebGpu, probeGpu } from '../gpu/gpu-probe.js';
import { readVerdict, saveVerdict, verdictFile, verdictKey, type GpuVerdict } from '../gpu/gpu-verdict.js';
import { decideDevice, hidesSoftwareAdapters, type DeviceFacts, type FactName } from './decide-device.js';

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
  let environment = options.environment;
  const facts: DeviceFacts = {
    requested,
    model: model.name,
    // Read from the machine only when a rule reads it: device 'cpu' never looks at the GPU.
    get environment() {
      environment ??= gpuEnvironment();
      return environment;
    },
    softwareGpu: options.softwareGpu ?? process.env[SOFTWARE_GPU_OPT_IN] === '1',
    verdictFile: verdictFile(),
    nodePlatform: `${process.platform} ${process.arch}`,
  };
  const sessions: { gpu?: WorkerSession; gpuStartMs?: number; cpu?: WorkerSession } = {};
  const loadCpu = () => WorkerSession.load(model, { ...options, provider: 'cpu' }, verified, options);
  const report = (device: 'cpu' | 'gpu', reason: string): DeviceReport => ({
    requested,
    device,
    reason,
    concurrency: concurrencyFor(device),
  });

  /** Learns the fact a rule asked for. */
  const learn = async (fact: FactName): Promise<void> => {
    switch (fact) {
      case 'webgpu':
        facts.webGpu = await bindingHasWebGpu();
        return;
      case 'claim':
        // One GPU user per process (gpu-claim.ts): held while placing, so the probe is not paid for a GPU held
        // elsewhere; released below (the GPU session, if any, holds its own claim).
        facts.gpuBusy = (await claimGpu()) ?? false;
        return;
      case 'verdict':
        facts.verdict = readVerdict(verdictKey(facts.environment, model)) ?? null;
        return;
      case 'photos':
        // Awaited only where it can change the answer: the photos are being found meanwhile.
        facts.photos = (await photos) ?? null;
        return;
      case 'probe': {
        // Asked of a child process first: without a working adapter the Vulkan loader and Dawn print to this
        // process's stderr, and a failed request for an adapter fails every later one in the process.
        const software = hidesSoftwareAdapters(facts) ? 'hidden' : 'allowed';
        const probe = await probeGpu(software, { environment: facts.environment });
        if (!probe.ok) await verified; // a corrupt or missing model file is reported as such, not as a GPU failure
        facts.probe = probe;
        return;
      }
      case 'gpu-session':
        await gpuFailureOf(async () => {
          Object.assign(sessions, await loadOnGpu(model, options, verified, facts));
          facts.gpuLoaded = true;
        });
        return;
      case 'measure':
        await gpuFailureOf(async () => {
          const measured = await measureVerdict(sessions.gpu as WorkerSession, sessions.gpuStartMs ?? 0, loadCpu);
          sessions.cpu = measured.cpu;
          facts.measured = measured.verdict;
          saveVerdict(verdictKey(facts.environment, model), measured.verdict);
        });
        return;
    }
  };
  /** A failure of the model on the GPU, as a fact; device_unavailable and a bad model file are thrown as they are. */
  const gpuFailureOf = async (attempt: () => Promise<void>): Promise<void> => {
    try {
      await attempt();
    } catch (error) {
      if (error instanceof RmbgError && error.code === 'device_unavailable') throw error;
      await verified; // a corrupt or missing model file is reported as such, not as a GPU failure
      facts.gpuFailure = gpuErrorText(error);
    }
  };

  try {
    for (;;) {
      const decision = decideDevice(facts);
      if ('ask' in decision) {
        await learn(decision.ask);
        continue;
      }
      if (decision.device === 'unavailable') throw new RmbgError('device_unavailable', decision.reason);
      if (decision.device === 'gpu') {
        await sessions.cpu?.release(); // the CPU's session that measured against it
        return { session: sessions.gpu as WorkerSession, device: report('gpu', decision.reason) };
      }
      // The GPU's session goes when measured slower; one that failed is left as it was (a run may still hold it).
      if (facts.measured) await sessions.gpu?.release();
      return { session: sessions.cpu ?? (await loadCpu()), device: report('cpu', decision.reason) };
    }
  } finally {
    if (facts.gpuBusy === false) releaseGpu();
  }
}

/** The GPU session for the facts, software adapters hidden from it where auto hides them, and its start's time (for
 * auto's measurement). */
async function loadOnGpu(
  model: ResolvedModel,
  options: PlacementOptions,
  verified: Promise<unknown>,
  facts: DeviceFacts,
): Promise<{ gpu: WorkerSession; gpuStartMs: number }> {
  const load = () => gpuSession(model, options, verified, firstGpuRunLimitMs(options));
  // Measuring: the weights' first check (a hash) is not counted in the GPU's start, as later starts skip it.
  const measuring = facts.requested === 'auto' && !facts.verdict;
  if (measuring) await verified.catch(() => undefined);
  const loadStarted = performance.now();
  const gpu = await (hidesSoftwareAdapters(facts) ? withSoftwareAdaptersHidden(load, facts.environment) : load());
  return { gpu, gpuStartMs: Math.round(performance.now() - loadStarted) };
}

/** auto's measurement: one blank run on the GPU (its first run is done) against the CPU provider's second, and each
 * device's start up to its first run's answer (`gpuStartMs`: the GPU session's, measured by the caller). */
async function measureVerdict(
  gpu: WorkerSession,
  gpuStartMs: number,
  loadCpu: () => Promise<WorkerSession>,
): Promise<{ verdict: GpuVerdict; cpu: WorkerSession }> {
  const timed = async (session: WorkerSession) => {
    const started = performance.now();
    await session.runBlank();
    return Math.round(performance.now() - started);
  };
  const gpuMs = await timed(gpu);
  const cpuStarted = performance.now();
  const cpu = await loadCpu();
  await timed(cpu); // the CPU's first run, as the GPU's was
  const cpuStartMs = Math.round(performance.now() - cpuStarted);
  const cpuMs = await timed(cpu);
  const verdict: GpuVerdict = {
    device: gpuMs < cpuMs ? 'gpu' : 'cpu', // a tie goes to the CPU, which starts sooner
    gpuMs,
    cpuMs,
    gpuStartMs,
    cpuStartMs,
    at: new Date().toISOString(),
  };
  return { verdict, cpu };
}
