// The public API of the rmbg package (`import … from 'rmbg'`), and nothing else: package.json exports only
// this module. It imports nothing heavy: sharp and onnxruntime load on the first on-device removal, fastify
// and SQLite when createServer() runs. Documented, with an example per export, in docs/library.md; each exported
// function's @example is type-checked by test/unit/library/exported-function-examples.test.ts.

import type { BatchEvent } from './batch/batch-events.js';
import type { ImageInput } from './library/image-input.js';
import type { RemoveBackgroundOptions } from './library/remove-options.js';
import { createRmbg, type RemoveBackgroundResult, type RemoveBackgroundsOptions } from './library/rmbg.js';
import type { RmbgServer, ServerOptions } from './library/server-options.js';

export type { Device, DeviceReport } from './api/device.js';
export { ERRORS, RmbgError, type ErrorCode, type ErrorPolicy } from './api/errors.js';
export type { Format, OutputFormat, Size } from './api/options.js';
export type {
  ArrivalEvent,
  BatchEvent,
  BatchSettings,
  BatchSummary,
  FileEvent,
  FileStatus,
  StartEvent,
} from './batch/batch-events.js';
export type { ForegroundBox } from './api/wire-types.js';
export type { ImageInput } from './library/image-input.js';
export type { ImageOptions, RemoveBackgroundOptions, RunOptions } from './library/remove-options.js';
export { createRmbg, type RemoveBackgroundResult, type RemoveBackgroundsOptions, type Rmbg } from './library/rmbg.js';
export type { RmbgServer, ServerOptions } from './library/server-options.js';

/** The instance behind the top-level functions; its engines load on first use. */
const shared = createRmbg();

/**
 * Removes the background of one image, on this computer (default) or through `apiUrl`.
 *
 * @example
 * ```ts
 * import { writeFile } from 'node:fs/promises';
 * import { removeBackground } from 'rmbg';
 *
 * const cutout = await removeBackground('photo.jpg', { size: 'hd', format: 'auto' });
 * await writeFile(`photo-cutout.${cutout.format}`, cutout.data); // png when transparent, jpg when opaque
 * ```
 */
export function removeBackground(
  input: ImageInput,
  options?: RemoveBackgroundOptions,
): Promise<RemoveBackgroundResult> {
  return shared.removeBackground(input, options);
}

/**
 * The CLI's batch over files and folders: one event per file, then a summary; re-running resumes.
 *
 * @example
 * ```ts
 * import { removeBackgrounds } from 'rmbg';
 *
 * for await (const event of removeBackgrounds('./shoot', { outDir: './cutouts', recursive: true })) {
 *   if (event.type === 'file' && event.status === 'failed') console.error(event.input, event.error?.message);
 *   if (event.type === 'summary') console.log(`${event.done} done, ${event.failed} failed`);
 * }
 * ```
 */
export function removeBackgrounds(
  inputs: string | readonly string[],
  options: RemoveBackgroundsOptions,
): AsyncGenerator<BatchEvent, void, undefined> {
  return shared.removeBackgrounds(inputs, options);
}

/**
 * Releases the engines the top-level functions loaded (they load again on the next call).
 *
 * @example
 * ```ts
 * import { close, removeBackground } from 'rmbg';
 *
 * try {
 *   console.log((await removeBackground('photo.jpg')).width);
 * } finally {
 *   await close(); // frees the model's memory; the process may go on with other work
 * }
 * ```
 */
export function close(): Promise<void> {
  return shared.close();
}

/**
 * `rmbg serve` embedded: resolves once it listens, to `{ url, close() }`.
 *
 * @example
 * ```ts
 * import { createServer } from 'rmbg';
 *
 * const server = await createServer({ port: 0, dataDir: './rmbg-data', ui: false });
 * const ready = await fetch(`${server.url}/readyz`);
 * console.log(server.url, ready.status, server.device);
 * await server.close();
 * ```
 */
export async function createServer(options?: ServerOptions): Promise<RmbgServer> {
  const { createServer: start } = await import('./library/create-server.js');
  return start(options);
}
