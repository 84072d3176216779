// The on-device engines of one library instance: one per model, created on first use and shared by every
// call (concurrent calls wait for the same load; the session serialises inference). Loading onnxruntime and
// sharp happens here, on the first local removal, never at import.

import type { Engine } from '../engine/types.js';
import { engineKeyOf, engineOptionsOf, type EngineSettings } from './engine-settings.js';

export class EnginePool {
  private readonly engines = new Map<string, Promise<Engine>>();

  /** The engine of `model` (a manifest name or .onnx path; undefined: the default model) on `device`. */
  async engineFor(settings: EngineSettings): Promise<Engine> {
    const [{ createEngine }, { resolveModel }] = await Promise.all([
      import('../engine/index.js'),
      import('../engine/model/model-registry.js'),
    ]);
    // The user's own models (`rmbg models add`) are found in the data directory the CLI uses (RMBG_DATA_DIR or the default).
    const options = engineOptionsOf(settings);
    // Keyed by the weights' path, so 'isnet-medium' and the default share one engine, and by every other engine row.
    const key = engineKeyOf(options, resolveModel(options.model, options.userModelsDir).path);
    let engine = this.engines.get(key);
    if (!engine) {
      engine = createEngine(options);
      this.engines.set(key, engine);
      // A failed load (missing weights) is not cached: the next call tries again, e.g. after `npm run models`.
      engine.catch(() => this.engines.delete(key));
    }
    return engine;
  }

  /** Releases every engine loaded so far (after its runs in flight); a later call loads again. */
  async close(): Promise<void> {
    const loading = [...this.engines.values()];
    this.engines.clear();
    const loaded = await Promise.allSettled(loading);
    await Promise.all(loaded.map((result) => (result.status === 'fulfilled' ? result.value.close() : undefined)));
  }
}
