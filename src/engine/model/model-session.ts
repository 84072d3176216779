// One onnxruntime session per model, runs serialised: two at once would fight over the same threads.

import { availableParallelism } from 'node:os';
import type { InferenceSession as OrtSession } from 'onnxruntime-node';
import { RmbgError } from '../../api/errors.js';
import { readFileParallel } from '../../platform/read-file-parallel.js';
import { type CachedGraph, cachedGraph, DEFAULT_GRAPH_CACHE_DIR, dropCachedGraph } from './graph-cache.js';
import { inputSizeOf } from './model-contract.js';
import type { ResolvedModel } from './model-registry.js';

/** onnxruntime's execution provider: its CPU provider, or WebGPU (Vulkan, Metal or Direct3D 12 underneath). */
export type Provider = 'cpu' | 'webgpu';

export interface SessionOptions {
  /** Default 'cpu'. A 'webgpu' session never uses the graph cache: its file is optimised for this CPU. */
  provider?: Provider;
  /** Threads for one inference (intra-op). Default: all cores (on 2 loaded cores 2 and 1 tie; bench/RESULTS.md). */
  threads?: number;
  /**
   * Let idle ORT worker threads spin between operators instead of sleeping. Default off: on 2 cores a spinning
   * thread takes the core that sharp needs to decode/encode the other image in flight (bench/RESULTS.md).
   */
  spinWait?: boolean;
  /**
   * Folder for ORT's optimised graph (graph-cache.ts); false: optimise at each start; true (the row's default)
   * or none: the user's cache folder. Only models with a known sha256 (manifest, `rmbg models add`) are cached.
   */
  graphCache?: string | boolean;
}

/** The mask plane a run gives: one float per pixel of the model's output (0..1 after the contract's activation). */
export interface MaskPlane {
  data: Float32Array;
  width: number;
  height: number;
}

export class ModelSession {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly inputName: string;
  private readonly outputName: string;

  private constructor(
    private readonly session: OrtSession,
    private readonly ort: typeof import('onnxruntime-node'),
    readonly model: ResolvedModel,
    /** The cached graph's bytes, which the session reads in place: they must live as long as it does. */
    private readonly graphBytes?: Buffer,
  ) {
    this.inputName = model.contract.input.name ?? (session.inputNames[0] as string);
    this.outputName = model.contract.output ?? (session.outputNames[0] as string);
  }

  /** The contract's tensor names that the file lacks, each with what it has instead (for `rmbg models add`). */
  contractMismatches(): string[] {
    const problems: string[] = [];
    if (!this.session.inputNames.includes(this.inputName))
      problems.push(`it has no input '${this.inputName}' (inputs: ${this.session.inputNames.join(', ')})`);
    if (!this.session.outputNames.includes(this.outputName))
      problems.push(`it has no output '${this.outputName}' (outputs: ${this.session.outputNames.join(', ')})`);
    return problems;
  }

  /** `verified`: the weights' check, run alongside; only once it passes is the optimised graph cached. */
  static async load(
    model: ResolvedModel,
    options: SessionOptions = {},
    verified: Promise<unknown> = Promise.resolve(),
  ): Promise<ModelSession> {
    const ort = await import('onnxruntime-node');
    const provider = options.provider ?? 'cpu';
    const settings = sessionSettings(options, provider);
    const { graphCache } = options;
    const folder = typeof graphCache === 'string' ? graphCache : DEFAULT_GRAPH_CACHE_DIR;
    const cacheDir = provider === 'cpu' && graphCache !== false ? folder : false;
    const graph =
      cacheDir && model.expected
        ? cachedGraph(cacheDir, model.expected.sha256, ort.env.versions.common, provider)
        : undefined;
    try {
      const fromCache = graph?.cached
        ? await ModelSession.loadCachedGraph(ort, model, graph.cached, settings)
        : undefined;
      if (fromCache) return fromCache;
      const session = await optimiseModel(ort, model.path, settings, graph);
      await verified.then(
        () => graph?.commit(),
        () => graph?.discard(),
      );
      return new ModelSession(session, ort, model);
    } catch (error) {
      throw new RmbgError(
        'model_unavailable',
        `cannot load model ${model.name} from ${model.path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** A session on the cached optimised graph; undefined, and the file dropped, when ORT cannot load it. */
  private static async loadCachedGraph(
    ort: Ort,
    model: ResolvedModel,
    file: string,
    { base, entries }: SessionSettings,
  ): Promise<ModelSession | undefined> {
    try {
      // Read in place, no parse or copy (bench/RESULTS.md, "Issue #9: fp32 graph, start-up, memory").
      const bytes = await readFileParallel(file);
      const inPlace = { use_ort_model_bytes_directly: '1', use_ort_model_bytes_for_initializers: '1' };
      const session = await ort.InferenceSession.create(bytes, {
        ...base,
        graphOptimizationLevel: 'disabled',
        extra: { session: { ...entries, ...inPlace } },
      });
      return new ModelSession(session, ort, model, bytes);
    } catch {
      dropCachedGraph(file); // unreadable: optimise the original again (and save it next time)
      return undefined;
    }
  }

  get inputSize(): { width: number; height: number } {
    return inputSizeOf(this.model.contract);
  }

  /** Runs the model on a planar CHW float tensor; resolves to the first output plane (the mask, 0..1). A run whose
   * turn comes when `wanted()` is false fails without running. */
  run(input: Float32Array, wanted: () => boolean = () => true): Promise<MaskPlane> {
    const result = this.queue.then(() => {
      if (!wanted()) throw new RmbgError('processing_failed', `model ${this.model.name}: the run was dropped unrun`);
      return this.runNow(input);
    });
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async runNow(input: Float32Array): Promise<MaskPlane> {
    const { contract } = this.model;
    const tensor = new this.ort.Tensor('float32', input, contract.input.shape);
    // Fetch only the mask: a model may have side outputs (several 1024² planes) we would copy for nothing.
    const outputs = await this.session.run({ [this.inputName]: tensor }, [this.outputName]);
    const mask = outputs[this.outputName];
    if (!mask)
      throw new RmbgError('processing_failed', `model ${this.model.name} returned no '${this.outputName}' output`);
    const dims = mask.dims;
    const height = Number(dims.at(-2));
    const width = Number(dims.at(-1));
    const data = mask.data as Float32Array;
    if (!(width > 0 && height > 0) || data.length < width * height) {
      throw new RmbgError(
        'processing_failed',
        `model ${this.model.name}'s output '${this.outputName}' has shape [${dims.join(', ')}], not […, height, width]`,
      );
    }
    const plane = data.length === width * height ? data : data.subarray(0, width * height);
    if (contract.activation === 'sigmoid')
      for (let i = 0; i < plane.length; i++) plane[i] = 1 / (1 + Math.exp(-(plane[i] as number)));
    if (contract.stretch === 'min-max') stretchToUnit(plane);
    return { data: plane, width, height };
  }

  async release(): Promise<void> {
    await this.queue;
    await this.session.release();
    void this.graphBytes; // held until here
  }
}

/** Maps the plane's min to 0 and its max to 1, as rembg's sessions do with `(pred - mi) / (ma - mi)`; a flat
 * plane (max = min, where rembg would divide by zero) is left as it is. */
export function stretchToUnit(plane: Float32Array): void {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const value of plane) {
    if (value < min) min = value;
    if (value > max) max = value;
  }
  const span = max - min;
  if (!(span > 0)) return;
  for (let i = 0; i < plane.length; i++) plane[i] = ((plane[i] as number) - min) / span;
}

type Ort = typeof import('onnxruntime-node');

/** ORT's options for every session, and its session config entries (which some loads add to). */
interface SessionSettings {
  base: OrtSession.SessionOptions;
  entries: Record<string, unknown>;
}

function sessionSettings(options: SessionOptions, provider: Provider): SessionSettings {
  const entries = { intra_op: { allow_spinning: options.spinWait ? '1' : '0' } };
  const base: OrtSession.SessionOptions = {
    executionProviders: [provider],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    intraOpNumThreads: options.threads ?? availableParallelism(),
    interOpNumThreads: 1,
    // Runs reuse the first run's memory instead of faulting in fresh pages
    // (bench/RESULTS.md, "Issue #9: large photos, ORT's arena").
    enableCpuMemArena: true,
    enableMemPattern: false,
    extra: { session: entries },
    // Errors only: ORT warns that a saved graph is specific to this CPU, which the cache's file name accounts for.
    logSeverityLevel: 3,
  };
  return { base, entries };
}

/** A session that optimises the model file, saving the optimised graph where the cache asks. */
function optimiseModel(
  ort: Ort,
  path: string,
  { base, entries }: SessionSettings,
  graph: CachedGraph | undefined,
): Promise<OrtSession> {
  const save = graph?.saveTo
    ? { optimizedModelFilePath: graph.saveTo, extra: { session: { ...entries, save_model_format: 'ORT' } } }
    : undefined;
  // A graph ORT cannot write in its format still runs: then without a cached copy.
  return ort.InferenceSession.create(path, { ...base, ...save }).catch((error: unknown) => {
    if (!save) throw error;
    graph?.discard();
    return ort.InferenceSession.create(path, base);
  });
}
