// The engine's front door: verified model + one reused session + the pipeline, as a BackgroundRemover.
// The session runs on a worker thread (inference-worker.ts), so an inference never holds the main thread.

import { toRmbgError } from '../api/errors.js';
import { CALLER_DEFAULT_OPTIONS, type RemoveOptions } from '../api/options.js';
import { resolveModel, verifyWeights } from './model-registry.js';
import { WorkerSession } from './inference-worker.js';
import type { SessionOptions } from './model-session.js';
import type { ModelRunner } from './pipeline.js';
import type { BackgroundRemover, EngineResult } from './types.js';

type Pipeline = typeof import('./pipeline.js').runPipeline;

export interface EngineOptions extends SessionOptions {
  /** Manifest name, user model name or .onnx path; default: the manifest's default model. */
  model?: string;
  /** Folder of the user's own models (`rmbg models add`): user-models.ts' userModelsDirOf(data dir). */
  userModelsDir?: string;
  /** One blank run before the engine is handed out, so the first image is no slower than the next. */
  warmUp?: boolean;
}

async function warmUp(session: ModelRunner, runPipeline: Pipeline): Promise<void> {
  const { default: sharp } = await import('sharp');
  const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#7f9fbf' } }).jpeg().toBuffer();
  await runPipeline(session, photo, CALLER_DEFAULT_OPTIONS);
}

export async function createEngine(options: EngineOptions = {}): Promise<BackgroundRemover & { session: WorkerSession }> {
  const model = resolveModel(options.model, options.userModelsDir);
  // Checking the weights (a stamp read, or a hash on the first use) overlaps the session's creation; its
  // verdict wins, so a corrupt file reports "does not match its sha256", not ORT's parse error.
  const verified = verifyWeights(model);
  const loading = WorkerSession.load(model, options, verified);
  // sharp and the pipeline load while the worker's ORT reads the graph: both are needed only once it is ready.
  const pipeline = import('./pipeline.js');
  pipeline.catch(() => undefined); // awaited below
  try {
    await verified;
  } catch (error) {
    loading.then((session) => session.release(), () => undefined);
    throw error;
  }
  const session = await loading;
  const { runPipeline } = await pipeline;
  // The warm-up is one whole small image, not just one model run, so libvips' first decode, resize and encode
  // are paid too. A model that cannot run fails it as it will fail each image: that is reported per image (a 502
  // and a refund from `rmbg serve`), so the warm-up's own failure is not an error.
  if (options.warmUp) await warmUp(session, runPipeline).catch(() => undefined);
  return {
    session,
    async removeBackground(input: Buffer, removeOptions: RemoveOptions, signal?: AbortSignal): Promise<EngineResult> {
      try {
        return await runPipeline(session, input, removeOptions, signal);
      } catch (error) {
        // Anything not already classified (a libvips or ORT failure mid-run) is a processing failure.
        throw toRmbgError(error, 'processing_failed');
      }
    },
    close: () => session.release(),
  };
}
