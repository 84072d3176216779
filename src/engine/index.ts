// The engine's front door: verified model + one reused session + the pipeline, as a BackgroundRemover.

import { toRmbgError } from '../api/errors.js';
import type { RemoveOptions } from '../api/options.js';
import { resolveModel, verifyWeights } from './model-registry.js';
import { ModelSession, type SessionOptions } from './model-session.js';
import { runPipeline } from './pipeline.js';
import type { BackgroundRemover, EngineResult } from './types.js';

export interface EngineOptions extends SessionOptions {
  /** Manifest name or .onnx path; default: the manifest's default model. */
  model?: string;
}

export async function createEngine(options: EngineOptions = {}): Promise<BackgroundRemover & { session: ModelSession }> {
  const model = resolveModel(options.model);
  await verifyWeights(model);
  const session = await ModelSession.load(model, options);
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
