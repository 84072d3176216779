// The engine's front door: verified model + one reused session on the chosen device (placement/place-session.ts) + the
// pipeline, as an Engine. The session runs on a worker thread (runtime/inference-worker.ts), so an inference never
// holds the main thread.

import { RmbgError, toRmbgError } from '../api/errors.js';
import { checkSharp } from '../platform/native-parts.js';
import { CALLER_DEFAULT_OPTIONS, type RemoveOptions } from '../api/options.js';
import type { DeviceReport } from '../api/device.js';
import { placeSession, type JobSize, type PlacementOptions } from './placement/place-session.js';
import { provideWeights, resolveModel, verifyWeights } from './model/model-registry.js';
import type { WorkerSession } from './runtime/inference-worker.js';
import type { ModelRunner } from './pipeline.js';
import type { DecodedPhoto, Engine, EngineResult, LocalOutputs } from './types.js';

type Pipeline = typeof import('./pipeline.js').runPipeline;

export interface EngineOptions extends PlacementOptions {
  /** Manifest name, user model name or .onnx path; default: the manifest's default model. */
  model?: string;
  /** Folder of the user's own models (`rmbg models add`): user-models.ts' userModelsDirOf(data dir). */
  userModelsDir?: string;
  /** One blank run before the engine is handed out, so the first image is no slower than the next. */
  warmUp?: boolean;
  /** The foreground's own colour under soft edges (settings/engine.ts `cleanEdges`); on unless false. */
  cleanEdges?: boolean;
}

async function warmUp(session: ModelRunner, runPipeline: Pipeline): Promise<void> {
  const { default: sharp } = await import('sharp');
  const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#7f9fbf' } })
    .jpeg()
    .toBuffer();
  await runPipeline(session, photo, CALLER_DEFAULT_OPTIONS);
}

/** sharp loaded first, through a dynamic import, so an install without its binary fails in one line with the fix
 * (a static import of a throwing sharp escapes every catch on Node 20). */
async function loadSharp(): Promise<void> {
  const sharp = await checkSharp();
  if (!sharp.loads)
    throw new RmbgError('model_unavailable', `the engine cannot load sharp: ${sharp.error}; fix: ${sharp.fix}`);
}

/** `job`: what the caller knows of the job, which auto weighs (placement/place-session.ts); not one of the engine's options. */
export async function createEngine(
  options: EngineOptions = {},
  job: JobSize = {},
): Promise<Engine & { session: WorkerSession; device: DeviceReport; options: EngineOptions }> {
  const model = resolveModel(options.model, options.userModelsDir);
  await loadSharp();
  await provideWeights(model);
  // Checking the weights (a stamp read, or a hash on the first use) overlaps the session's creation; its
  // verdict wins, so a corrupt file reports "does not match its sha256", not ORT's parse error.
  const verified = verifyWeights(model);
  verified.catch(() => undefined); // awaited below
  const loading = placeSession(model, options, verified, job);
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
    options,
    async cutOut(
      input: Buffer | DecodedPhoto,
      removeOptions: RemoveOptions,
      signal?: AbortSignal,
      local?: LocalOutputs,
    ): Promise<EngineResult> {
      try {
        return await runPipeline(session, input, removeOptions, signal, undefined, local, {
          cleanEdges: options.cleanEdges !== false,
        });
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
        recovering = session
          .runBlank()
          .catch(() => undefined)
          .finally(() => (recovering = undefined));
      }
      return why;
    },
    close: () => session.release(),
  };
}
