// The engine's front door: verified model + one reused session on the chosen device + the pipeline, as an
// Engine. The session runs on a worker thread (inference-worker.ts), so an inference never holds
// the main thread.

import { RmbgError, toRmbgError } from '../api/errors.js';
import { CALLER_DEFAULT_OPTIONS, type RemoveOptions } from '../api/options.js';
import { DEFAULT_DEVICE, SOFTWARE_GPU_OPT_IN, type Device, type DeviceReport } from '../api/device.js';
import { concurrencyFor } from './runtime/device-report.js';
import {
  describeEnvironment,
  gpuEnvironment,
  gpuErrorText,
  gpuFixHint,
  mayHaveHardwareGpu,
  withSoftwareAdaptersHidden,
  type GpuEnvironment,
} from './gpu/gpu-environment.js';
import { claimGpu, releaseGpu } from './gpu/gpu-claim.js';
import { bindingHasWebGpu, probeGpu, type GpuProbe } from './gpu/gpu-probe.js';
import {
  describeVerdict,
  readVerdict,
  saveVerdict,
  verdictFile,
  verdictKey,
  type GpuVerdict,
} from './gpu/gpu-verdict.js';
import { resolveModel, verifyWeights, type ResolvedModel } from './model/model-registry.js';
import { WorkerSession, type WorkerLimits } from './runtime/inference-worker.js';
import { inputSizeOf } from './model/model-contract.js';
import type { SessionOptions } from './model/model-session.js';
import type { ModelRunner } from './pipeline.js';
import type { DecodedPhoto, Engine, EngineResult } from './types.js';

type Pipeline = typeof import('./pipeline.js').runPipeline;

export interface EngineOptions extends Omit<SessionOptions, 'provider'>, WorkerLimits {
  /** Manifest name, user model name or .onnx path; default: the manifest's default model. */
  model?: string;
  /** Folder of the user's own models (`rmbg models add`): user-models.ts' userModelsDirOf(data dir). */
  userModelsDir?: string;
  /** Where the model runs (api/device.ts). Default auto. */
  device?: Device;
  /** What the machine offers WebGPU; default: read from it (gpu-environment.ts). Tests give one with a GPU device. */
  environment?: GpuEnvironment;
  /** One blank run before the engine is handed out, so the first image is no slower than the next. */
  warmUp?: boolean;
  /** For tests: a software adapter counts as a GPU. Default: whether RMBG_TEST_SOFTWARE_GPU is 1 (api/device.ts). */
  softwareGpu?: boolean;
}

/** A session and where it runs. */
interface PlacedSession {
  session: WorkerSession;
  device: DeviceReport;
}

/** One run on a blank tensor of the model's input size: shaders compiled, a device proven, a run timed. */
function blankRun(session: WorkerSession, model: ResolvedModel): Promise<unknown> {
  const { width, height } = inputSizeOf(model.contract);
  return session.run(new Float32Array(3 * width * height));
}

/** The GPU's first run may take this long before the GPU is given up on (shader compilation takes ~1 s). */
const FIRST_GPU_RUN_LIMIT_MS = 60_000;

/**
 * The model on the GPU (WebGPU), with one run on a blank tensor: that run compiles the shaders (so the first
 * photo is not slower) and shows a GPU that fails on its first run before any photo depends on it. A run that
 * outlives `firstRunLimitMs` is left behind: it holds the GPU queue, but a CPU session does not use it.
 */
async function gpuSession(
  model: ResolvedModel,
  options: EngineOptions,
  verified: Promise<unknown>,
  firstRunLimitMs: number,
): Promise<WorkerSession> {
  const session = await WorkerSession.load(model, { ...options, provider: 'webgpu' }, verified, options);
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the first run on the GPU did not finish in ${firstRunLimitMs / 1000} s`)),
      firstRunLimitMs,
    );
  });
  const firstRun = blankRun(session, model);
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
async function placeSession(
  model: ResolvedModel,
  options: EngineOptions,
  verified: Promise<unknown>,
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
      `cannot run model ${model.name} on the GPU: ${refused}. Use one rmbg instance per process for the GPU (share it between threads by messages), or device 'cpu' here.`,
    );
  }
  try {
    return await placeOnGpu(model, options, verified, environment, softwareGpu, onCpu);
  } finally {
    releaseGpu(); // the GPU session, if any, holds its own claim
  }
}

async function placeOnGpu(
  model: ResolvedModel,
  options: EngineOptions,
  verified: Promise<unknown>,
  environment: GpuEnvironment,
  softwareGpu: boolean,
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
    const load = () => gpuSession(model, options, verified, FIRST_GPU_RUN_LIMIT_MS);
    const session = await (software === 'hidden' ? withSoftwareAdaptersHidden(load, environment) : load());
    const onGpu = (reason: string): PlacedSession => ({
      session,
      device: { requested, device: 'gpu', reason, concurrency: concurrencyFor('gpu') },
    });
    if (known) {
      return onGpu(`the GPU is faster here for this model (${describeVerdict(known)}; remembered in ${verdictFile()})`);
    }
    if (verdictAt !== undefined) {
      const verdict = await measureVerdict(model, session, onCpu);
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

/** auto's measurement: one blank run on the GPU (its first run is done) against the CPU provider's second. */
async function measureVerdict(
  model: ResolvedModel,
  gpu: WorkerSession,
  onCpu: (reason: string) => Promise<PlacedSession>,
): Promise<{ verdict: GpuVerdict; cpu: PlacedSession }> {
  const timed = async (session: WorkerSession) => {
    const started = performance.now();
    await blankRun(session, model);
    return Math.round(performance.now() - started);
  };
  const gpuMs = await timed(gpu);
  const cpu = await onCpu('');
  await timed(cpu.session); // the CPU's first run, as the GPU's was
  const cpuMs = await timed(cpu.session);
  const verdict: GpuVerdict = { device: gpuMs <= cpuMs ? 'gpu' : 'cpu', gpuMs, cpuMs, at: new Date().toISOString() };
  const reason = `the CPU is faster here for this model (${describeVerdict(verdict)})`;
  return { verdict, cpu: { ...cpu, device: { ...cpu.device, reason } } };
}

/** WebGPU works, but only on a software adapter: never "the GPU" (it is slower than the CPU provider). */
function softwareAdapterOnly(model: ResolvedModel, adapters: string, environment: GpuEnvironment): string {
  return `cannot run model ${model.name} on the GPU: the only WebGPU adapter here is a software one (${adapters}), which runs on the CPU and is slower than device 'cpu'. Seen: ${describeEnvironment(environment)}. To fix: ${gpuFixHint(environment)}; 'rmbg doctor' checks it. Device 'auto' or 'cpu' runs on the CPU.`;
}

/** WebGPU itself fails: what was seen, what the loader said, how to fix it on this OS. */
function noWorkingGpu(model: ResolvedModel, failure: string, environment: GpuEnvironment, probe: GpuProbe): string {
  const said = probe.log.length
    ? ` The Vulkan loader and Dawn said: ${probe.log
        .slice(0, 4)
        .map((line) => line.trim())
        .join(' | ')}.`
    : '';
  return `cannot run model ${model.name} on the GPU: WebGPU failed: ${failure}. Seen: ${describeEnvironment(environment)}.${said} To fix: ${gpuFixHint(environment)}; 'rmbg doctor' checks it. Device 'auto' or 'cpu' runs on the CPU.`;
}

/** WebGPU works (a one-node model ran on it), but this model does not: nothing to install. */
function modelFailedOnGpu(model: ResolvedModel, failure: string): string {
  return `cannot run model ${model.name} on the GPU: the GPU works (a one-node test model ran on it), but this model failed on it: ${failure}. Device 'auto' or 'cpu' runs it on the CPU.`;
}

async function warmUp(session: ModelRunner, runPipeline: Pipeline): Promise<void> {
  const { default: sharp } = await import('sharp');
  const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#7f9fbf' } })
    .jpeg()
    .toBuffer();
  await runPipeline(session, photo, CALLER_DEFAULT_OPTIONS);
}

export async function createEngine(
  options: EngineOptions = {},
): Promise<Engine & { session: WorkerSession; device: DeviceReport }> {
  const model = resolveModel(options.model, options.userModelsDir);
  // Checking the weights (a stamp read, or a hash on the first use) overlaps the session's creation; its
  // verdict wins, so a corrupt file reports "does not match its sha256", not ORT's parse error.
  const verified = verifyWeights(model);
  verified.catch(() => undefined); // awaited below
  const loading = placeSession(model, options, verified);
  // sharp and the pipeline load while the worker's ORT reads the graph: both are needed only once it is ready.
  const pipeline = import('./pipeline.js');
  pipeline.catch(() => undefined); // awaited below
  try {
    await verified;
  } catch (error) {
    loading.then(
      (placed) => placed.session.release(),
      () => undefined,
    );
    throw error;
  }
  const { session, device } = await loading;
  const { runPipeline } = await pipeline;
  // The warm-up is one whole small image, not just one model run, so libvips' first decode, resize and encode
  // are paid too. A model that cannot run fails it as it will fail each image: that is reported per image (a 502
  // and a refund from `rmbg serve`), so the warm-up's own failure is not an error.
  if (options.warmUp) await warmUp(session, runPipeline).catch(() => undefined);
  let recovering: Promise<unknown> | undefined;
  return {
    session,
    device,
    async cutOut(
      input: Buffer | DecodedPhoto,
      removeOptions: RemoveOptions,
      signal?: AbortSignal,
    ): Promise<EngineResult> {
      try {
        return await runPipeline(session, input, removeOptions, signal);
      } catch (error) {
        // Anything not already classified (a libvips or ORT failure mid-run) is a processing failure.
        throw toRmbgError(error, 'processing_failed');
      }
    },
    broken() {
      const why = session.broken;
      // While /readyz answers 503 nothing sends it a run, so the server's engine (warmed up) tries a blank one of its
      // own, one at a time: a fresh worker that answers it ends the broken state.
      if (why !== undefined && options.warmUp && !recovering) {
        recovering = blankRun(session, model)
          .catch(() => undefined)
          .finally(() => (recovering = undefined));
      }
      return why;
    },
    close: () => session.release(),
  };
}
