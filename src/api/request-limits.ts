// How much of a request body is read: the byte ceilings (all from LIMITS.maxImageBytes, as a raw file part or as
// base64 text), each check of them by name, and the reader that stops at the first byte past a ceiling.

import type { Readable } from 'node:stream';
import { RmbgError } from './errors.js';
import { LIMIT_TEXT, LIMITS } from './limits.js';
import type { RequestEncoding } from './media-types.js';

/** Room for every non-image field of a request (options, image_url, multipart part headers). */
const FIELD_ALLOWANCE_BYTES = 64 * 1024;

/** Characters of the padded base64 form of the largest accepted image. */
export const MAX_BASE64_CHARS = Math.ceil(LIMITS.maxImageBytes / 3) * 4;

/**
 * Body ceilings per encoding. Multipart carries a raw file part or image_file_b64 as text, so its ceiling is the
 * base64 size; escaping in JSON and urlencoded bodies adds to it, so those get an eighth more (bench/RESULTS.md).
 */
export const MAX_BODY_BYTES: Record<RequestEncoding, number> = {
  multipart: MAX_BASE64_CHARS + FIELD_ALLOWANCE_BYTES,
  json: Math.ceil(MAX_BASE64_CHARS * 1.125) + FIELD_ALLOWANCE_BYTES,
  urlencoded: Math.ceil(MAX_BASE64_CHARS * 1.125) + FIELD_ALLOWANCE_BYTES,
};

/** Most parts a multipart body may have: every known field once, with room for empty unsupported ones. */
export const MAX_MULTIPART_PARTS = 32;

/** busboy's limits: it signals 'limit' when a file reaches fileSize, so one byte more means "over the limit". */
export const MULTIPART_LIMITS = {
  fileSize: LIMITS.maxImageBytes + 1,
  fieldSize: MAX_BASE64_CHARS,
  parts: MAX_MULTIPART_PARTS,
} as const;

function bodyTooLarge(maxBytes: number): RmbgError {
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return new RmbgError(
    'file_too_large',
    `the request body exceeds ${mib(maxBytes)} for this content type; ` +
      `the image may be at most ${mib(LIMITS.maxImageBytes)} (as a file, or that much data as base64)`,
  );
}

/** A Content-Length over the encoding's ceiling is refused before any byte is read. */
export function checkDeclaredBodyLength(contentLength: number | undefined, maxBytes: number): void {
  if (contentLength !== undefined && contentLength > maxBytes) throw bodyTooLarge(maxBytes);
}

/** The bytes read so far (chunked bodies, or a Content-Length that lied) against the encoding's ceiling. */
export function checkBodyBytesRead(received: number, maxBytes: number): void {
  if (received > maxBytes) throw bodyTooLarge(maxBytes);
}

/** The image_file part reached LIMITS.maxImageBytes (busboy's fileSize limit fired). */
export function imageFilePartTooLarge(): RmbgError {
  return new RmbgError(
    'file_too_large',
    `image_file exceeds ${LIMITS.maxImageBytes} bytes (${LIMIT_TEXT.maxImageBytes}); send a smaller image`,
  );
}

/** A multipart text part reached MAX_BASE64_CHARS (busboy's fieldSize limit fired). */
export function textPartTooLong(name: string): RmbgError {
  if (name === 'image_file_b64')
    return new RmbgError(
      'file_too_large',
      `image_file_b64 exceeds ${MAX_BASE64_CHARS} characters, the base64 form of ${LIMIT_TEXT.maxImageBytes}`,
    );
  return new RmbgError('invalid_request', `field '${name}' is too long`);
}

/** image_file_b64 in any encoding, counted as the bytes it decodes to, before decoding it. */
export function checkDecodedImageBytes(decodedBytes: number): void {
  if (decodedBytes > LIMITS.maxImageBytes) {
    throw new RmbgError(
      'file_too_large',
      `image_file_b64 decodes to ${decodedBytes} bytes; the image may be at most ${LIMITS.maxImageBytes} bytes (${LIMIT_TEXT.maxImageBytes})`,
    );
  }
}

export interface BodyLimits {
  maxBytes: number;
  /** Stops reading; its reason (an RmbgError, e.g. request_timeout) becomes the rejection. */
  signal?: AbortSignal | undefined;
}

/**
 * Feeds each chunk to `onChunk` until the body ends; rejects and stops reading at the first byte past the ceiling
 *, when the signal fires, or when the client goes away: nothing over the ceiling is kept.
 */
export function streamBody(body: Readable, limits: BodyLimits, onChunk: (chunk: Buffer) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let received = 0;
    let settled = false;
    const { signal } = limits;
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
      signal?.removeEventListener('abort', onAbort);
      if (error === undefined) {
        resolve();
      } else {
        body.pause();
        reject(error);
      }
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      try {
        checkBodyBytesRead(received, limits.maxBytes);
        onChunk(chunk);
      } catch (error) {
        finish(error);
      }
    };
    const onEnd = () => finish();
    const onError = (error: Error) =>
      finish(
        new RmbgError('invalid_request', `the request body could not be read: ${error.message}`, { cause: error }),
      );
    const onClose = () =>
      finish(new RmbgError('invalid_request', 'the connection closed before the request body was complete'));
    const onAbort = () => finish(signal?.reason);

    if (signal?.aborted) return finish(signal.reason);
    signal?.addEventListener('abort', onAbort);
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
    body.on('close', onClose);
  });
}

/** The whole body as one Buffer, for the encodings that need all of it before parsing (JSON, urlencoded). */
export async function readBody(body: Readable, limits: BodyLimits): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await streamBody(body, limits, (chunk) => chunks.push(chunk));
  return Buffer.concat(chunks);
}
