// One onnxruntime-node inference session per model, reused for every image, with runs serialised:
// two concurrent runs on 2 cores would only fight over the same threads, while decode/encode of
// other images proceeds meanwhile on sharp's (libuv) threads.

import { availableParallelism } from 'node:os';
import type { InferenceSession as OrtSession } from 'onnxruntime-node';
import { RmbgError } from '../api/errors.js';
import type { ResolvedModel } from './model-registry.js';

export interface SessionOptions {
  /** Threads for one inference (intra-op). Default: all cores (on 2 loaded cores 2 and 1 tie; bench/RESULTS.md). */
  threads?: number;
  /**
   * Let idle ORT worker threads spin between operators instead of sleeping. Default off: on 2 cores a spinning
   * thread takes the core that sharp needs to decode/encode the other image in flight (bench/RESULTS.md).
   */
  spinWait?: boolean;
}

export class ModelSession {
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly session: OrtSession,
    private readonly ort: typeof import('onnxruntime-node'),
    readonly model: ResolvedModel,
  ) {}

  static async load(model: ResolvedModel, options: SessionOptions = {}): Promise<ModelSession> {
    const ort = await import('onnxruntime-node');
    try {
      const session = await ort.InferenceSession.create(model.path, {
        executionProviders: ['cpu'],
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        intraOpNumThreads: options.threads ?? availableParallelism(),
        interOpNumThreads: 1,
        extra: { session: { intra_op: { allow_spinning: options.spinWait ? '1' : '0' } } },
      });
      return new ModelSession(session, ort, model);
    } catch (error) {
      throw new RmbgError('model_unavailable', `cannot load model ${model.entry.name} from ${model.path}: ${(error as Error).message}`, { cause: error });
    }
  }

  get inputSize(): { width: number; height: number } {
    const [, , height, width] = this.model.entry.input.shape;
    return { width, height };
  }

  /** Runs the model on a planar CHW float tensor; resolves to the first output plane (the mask, 0..1). */
  run(input: Float32Array): Promise<Float32Array> {
    const result = this.queue.then(() => this.runNow(input));
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async runNow(input: Float32Array): Promise<Float32Array> {
    const { entry } = this.model;
    const tensor = new this.ort.Tensor('float32', input, entry.input.shape);
    // Fetch only the final mask: the model has 11 more side outputs (several of 1024² floats) we would copy for nothing.
    const outputs = await this.session.run({ [entry.input.name]: tensor }, [entry.output]);
    const mask = outputs[entry.output];
    if (!mask) throw new RmbgError('processing_failed', `model ${entry.name} returned no '${entry.output}' output`);
    return mask.data as Float32Array;
  }

  async release(): Promise<void> {
    await this.queue;
    await this.session.release();
  }
}
