// Reads a request body with a byte ceiling and a cancel signal: reading stops at the first byte past the
// ceiling (file_too_large), when the signal fires, or when the client goes away; nothing over the ceiling is kept.

import type { Readable } from 'node:stream';
import { LIMITS } from './options.js';
import { RmbgError } from './errors.js';

export interface BodyLimits {
  maxBytes: number;
  /** Stops reading; its reason (an RmbgError, e.g. request_timeout) becomes the rejection. */
  signal?: AbortSignal | undefined;
}

export function bodyTooLarge(maxBytes: number): RmbgError {
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return new RmbgError(
    'file_too_large',
    `the request body exceeds ${mib(maxBytes)} for this content type; the image may be at most ${mib(LIMITS.maxImageBytes)} (as a file, or that much data as base64)`,
  );
}

/** Feeds each chunk to `onChunk` until the body ends; rejects (and stops reading) on the first problem. */
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
      if (received > limits.maxBytes) return finish(bodyTooLarge(limits.maxBytes));
      try {
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
