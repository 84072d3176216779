// A library instance: removeBackground() for one image and removeBackgrounds() for the CLI's batch, with
// the on-device engines they share. Heavy modules (sharp, onnxruntime, undici) load on first use.

import { RmbgError } from '../api/errors.js';
import type { OutputFormat, RemoveOptions } from '../api/options.js';
import type { ForegroundBox } from '../api/wire-types.js';
import type { BatchEvent } from '../batch/batch-events.js';
import type { Remover } from '../batch/remover.js';
import { type BATCH_SETTINGS, REMOVE_TABLE } from '../settings/index.js';
import type { OptionsOf } from '../settings/setting.js';
import { EnginePool } from './engine-pool.js';
import { readImageInput, type ImageInput } from './image-input.js';
import { untilAborted } from './until-aborted.js';
import {
  parseImageOptions,
  remoteTarget,
  type RemoteTarget,
  type RemoveBackgroundOptions,
  type RunOptions,
} from './remove-options.js';

export interface RemoveBackgroundResult {
  /** The encoded image. */
  data: Buffer;
  format: OutputFormat;
  width: number;
  height: number;
  /** Foreground box on the (EXIF-oriented) input, in input pixels; undefined only from a server that does not send it. */
  foreground: ForegroundBox | undefined;
  /**
   * How far the cutout can be trusted, 0..1, from its mask (under 0.5: worth a look; docs/library.md); undefined only
   * from a server that does not send X-Confidence.
   */
  confidence: number | undefined;
  /** Where the model ran: 'gpu' or 'cpu' on this computer; undefined through `apiUrl` (the server does not say). */
  device: 'gpu' | 'cpu' | undefined;
  /** With `mask: true` (on this computer): the alpha at the photo's full size as a grayscale PNG, 16-bit for a 16-bit photo. */
  mask?: Buffer;
}

/** removeBackground()'s options and the batch's rows of src/settings (BATCH_SETTINGS); `outDir` is required. */
export type RemoveBackgroundsOptions = RemoveBackgroundOptions &
  OptionsOf<typeof BATCH_SETTINGS> & {
    /** Output folder: outputs are `outDir/<relative path>/<stem>.<ext>`, with the journal that makes a re-run resume. */
    outDir: string;
  };

export interface Rmbg {
  /** Removes the background of one image; see docs/library.md. */
  removeBackground(input: ImageInput, options?: RemoveBackgroundOptions): Promise<RemoveBackgroundResult>;
  /** Runs the CLI's batch over files and folders, yielding one event per file, then a summary. */
  removeBackgrounds(
    inputs: string | readonly string[],
    options: RemoveBackgroundsOptions,
  ): AsyncGenerator<BatchEvent, void, undefined>;
  /** Releases the on-device engines (after the runs in flight); later calls load them again. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * An instance with engines of its own: `removeBackground`, `removeBackgrounds` and `close`, released with
 * `await using` or `close()`.
 *
 * @example
 * ```ts
 * import { createRmbg } from 'rmbg';
 *
 * const rmbg = createRmbg();
 * try {
 *   const cutout = await rmbg.removeBackground('photo.jpg', { device: 'cpu', threads: 2 });
 *   console.log(cutout.device, cutout.foreground);
 * } finally {
 *   await rmbg.close();
 * }
 * ```
 */
export function createRmbg(): Rmbg {
  const engines = new EnginePool();

  /** On this computer with the pool's engine, or through the server of `target`; keeping the metadata asked for. */
  async function removerFor(
    target: RemoteTarget | undefined,
    run: RunOptions,
    removeOptions: RemoveOptions,
    mask: boolean,
  ): Promise<Remover> {
    const { keepingMetadata, localRemover, refuseLocalOnly } = await import('../batch/remover.js');
    if (target) {
      refuseLocalOnly(removeOptions, mask);
      // The remote remover derives each request's Idempotency-Key from the image and options: a retry, or the
      // same call again within the server's replay window, is replayed instead of charged twice.
      const { remoteRemover } = await import('../batch/remote-remover.js');
      const remote = remoteRemover({
        baseUrl: target.apiUrl,
        apiKey: target.apiKey,
        timeoutMs: target.timeoutMs,
        reading: { raw: run.raw },
      });
      return keepingMetadata(remote, run);
    }
    // Never closed by a call: the engine is the pool's, shared with other calls until close().
    return keepingMetadata(localRemover(await engines.engineFor(run), { raw: run.raw }), run);
  }

  return {
    async removeBackground(input, options = {}) {
      const { signal } = options;
      signal?.throwIfAborted();
      const removeOptions = parseImageOptions(options);
      const target = remoteTarget(options);
      const work = (async () => {
        const image = await readImageInput(input, signal);
        const mask = Boolean(options.mask);
        const remover = await removerFor(target, options, removeOptions, mask);
        const result = await remover.remove(image, removeOptions, { signal, mask: mask ? 'beside' : undefined });
        return {
          data: result.data,
          format: result.format,
          width: result.width,
          height: result.height,
          foreground: result.foreground,
          confidence: result.confidence,
          device: result.device,
          ...(result.mask && { mask: result.mask }),
        };
      })();
      // A cancelled call rejects with the caller's reason at once, not with our 'interrupted' at the engine's next stage.
      return untilAborted(work, signal);
    },

    async *removeBackgrounds(inputs, options) {
      const { signal } = options;
      signal?.throwIfAborted();
      const removeOptions = parseImageOptions(options, REMOVE_TABLE);
      const target = remoteTarget(options);
      if (typeof options.outDir !== 'string' || options.outDir === '') {
        throw new RmbgError(
          'usage_error',
          'outDir is required: the folder for the outputs and the journal that lets a re-run resume',
        );
      }
      const [{ discoverInputs }, { batchEvents }, { batchRowsOf }] = await Promise.all([
        import('../batch/discover-inputs.js'),
        import('../batch/run-batch.js'),
        import('../batch/batch-rows.js'),
      ]);
      const paths = typeof inputs === 'string' ? [inputs] : [...inputs];
      const { items, ...passedOver } = await discoverInputs(paths, {
        recursive: Boolean(options.recursive),
        outputDir: options.outDir,
        rawPairs: options.rawPairs,
      });
      const watch = options.watch === true ? await import('../batch/watch-inputs.js') : undefined;
      const folders = watch ? await watch.foldersToWatch(paths) : [];
      const remover = await removerFor(target, options, removeOptions, Boolean(options.mask || options.maskOnly));
      const events = batchEvents({
        items,
        passedOver,
        ...batchRowsOf(options, remover),
        options: removeOptions,
        remover,
        // The caller's signal cancels the files in flight too, not only the ones not started.
        stop: signal,
        abort: signal,
        arrivals:
          watch &&
          ((ended) =>
            watch.watchInputs(folders, ended, { recursive: Boolean(options.recursive), outputDir: options.outDir })),
      });
      for await (const event of events) {
        // An aborted batch ends with the abort, not with a summary that reads like an ending.
        if (event.type === 'summary' && signal?.aborted) break;
        yield event;
      }
      signal?.throwIfAborted();
    },

    close: () => engines.close(),
    [Symbol.asyncDispose]: () => engines.close(),
  };
}
