// What removeBackground() accepts as an image, read into bytes: in-memory data, a Blob, a file path, or a URL
// (file: read from disk; https: fetched under the same rules as the server's image_url).

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { RmbgError } from '../api/errors.js';
import { LIMITS } from '../api/limits.js';

/** An image: its bytes, a Blob, a file path, or a `file:` / `https:` URL. */
export type ImageInput = Buffer | Uint8Array | ArrayBuffer | Blob | string | URL;

export async function readImageInput(input: ImageInput, signal: AbortSignal | undefined): Promise<Buffer> {
  if (Buffer.isBuffer(input)) return input;
  if (input instanceof Uint8Array) return Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  if (input instanceof ArrayBuffer) return Buffer.from(input);
  if (input instanceof Blob) return Buffer.from(await input.arrayBuffer());
  if (typeof input === 'string') return readImageFile(input);
  if (input instanceof URL) {
    if (input.protocol === 'file:') return readImageFile(fileURLToPath(input));
    // Loaded only for https: the fetcher and its address policy are the service's own.
    const { fetchImageUrl } = await import('../image-url/image-url.js');
    return fetchImageUrl(input.href, {
      allowPrivate: false,
      timeoutMs: LIMITS.imageUrlTimeoutMs,
      maxBytes: LIMITS.maxImageBytes,
      signal,
    });
  }
  throw new RmbgError(
    'invalid_request',
    `the image must be a Buffer, Uint8Array, ArrayBuffer, Blob, file path or URL; got ${describe(input)}`,
  );
}

export async function readImageFile(path: string): Promise<Buffer> {
  return readFile(path).catch((error: Error) => {
    throw new RmbgError('io_error', `cannot read ${path}: ${error.message}`, { cause: error });
  });
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return value.constructor?.name ?? 'an object';
  return typeof value;
}
