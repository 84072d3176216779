// The Remover for an API server: each image is one POST /v1.0/removebg through the retrying client, under
// an Idempotency-Key derived from the image and options. The key is the token the batch journals, so a
// re-run sends the same key and meets the server's replay instead of a new charge; when the server keeps
// a key reserved (expired, failed, used for another request), the client's retry layer asks here for the
// next one. It reports throttling (429/503 retries) so the batch can lower its concurrency.

import { asksToSlowDown, policyOf, RmbgError } from '../api/errors.js';
import { formatOfMime } from '../api/media-types.js';
import { LIMIT_TEXT, LIMITS, type RemoveOptions } from '../api/options.js';
import { createApiClient, type ApiClient } from '../client/api-client.js';
import { idempotencyKeyFor } from '../client/idempotency-key.js';
import type { Remover } from './remover.js';

/** A balance shown in a message is not worth a long wait. */
const BALANCE_TIMEOUT_MS = 10_000;

/** Fresh keys tried for one image after the first: a server that refuses more is not going to accept it. */
const MAX_KEY_GENERATION = 3;

export interface RemoteRemover extends Remover {
  readonly client: ApiClient;
  onThrottle(listener: () => void): void;
}

function keyOf(image: Buffer, options: RemoveOptions, generation: number): string {
  return idempotencyKeyFor(image, options, generation ? `g${generation}` : '');
}

/** The generation an earlier run's key was derived with (0 when it is none of ours). */
function generationOf(image: Buffer, options: RemoveOptions, key: string): number {
  for (let generation = 0; generation <= MAX_KEY_GENERATION; generation++)
    if (keyOf(image, options, generation) === key) return generation;
  return 0;
}

/**
 * A server forgets a completed Idempotency-Key LIMITS.idempotencyKeyRetentionMs after it (on its clock, which may
 * differ from ours): a key first sent longer ago than the retention less this margin may be forgotten.
 */
const RETENTION_MARGIN_MS = 60 * 60 * 1000;

function forgotten(sentAt: number | undefined, now = Date.now()): boolean {
  return sentAt !== undefined && now - sentAt >= LIMITS.idempotencyKeyRetentionMs - RETENTION_MARGIN_MS;
}

export function remoteRemover(options: { baseUrl: string; apiKey: string; timeoutMs: number }): RemoteRemover {
  const listeners: Array<() => void> = [];
  const client = createApiClient({
    ...options,
    onRetry: (info) => {
      if (asksToSlowDown(info.error)) for (const listener of listeners) listener();
    },
  });
  return {
    mode: 'remote',
    client,
    onThrottle: (listener) => listeners.push(listener),
    async remove(image, removeOptions, call) {
      const { earlier } = call;
      // Same request as an earlier run: keep its key, so a request the server already charged is replayed for free.
      let generation = earlier ? generationOf(image, removeOptions, earlier.token) : 0;
      let key = keyOf(image, removeOptions, generation);
      if (earlier && !earlier.finished && earlier.token === key && !call.payAgain && forgotten(earlier.sentAt)) {
        // An earlier run sent this key and never got its answer into an output; the server may have charged it
        // and, this long after, no longer knows the key: sent again it would be a new request, charged again.
        throw new RmbgError(
          'idempotency_key_expired',
          `an earlier run sent this image more than ${LIMIT_TEXT.idempotencyKeyRetention} ago without receiving the result; the server may have charged for it and no longer remembers the request; run again with --retry-failed to pay for it again`,
          { status: 409 },
        );
      }
      await call.beforeSend?.(key);
      const result = await client.removeBackground(image, removeOptions, {
        idempotencyKey: key,
        signal: call.signal,
        filename: call.filename,
        renewIdempotencyKey: async (error) => {
          if (
            policyOf(error.code).newKeyPaysAgain &&
            earlier &&
            !earlier.finished &&
            earlier.token === key &&
            !call.payAgain
          ) {
            // An earlier run sent this key and never got its answer into an output (killed, or lost); the server
            // charged it and no longer keeps the result. A fresh key pays again: only on request.
            throw new RmbgError(
              error.code,
              `the server charged for this image in an earlier run more than ${LIMIT_TEXT.replayWindow} ago and can no longer replay the result; run again with --retry-failed to pay for it again`,
              { status: error.status, cause: error },
            );
          }
          if (generation >= MAX_KEY_GENERATION) return undefined;
          generation += 1;
          key = keyOf(image, removeOptions, generation);
          await call.beforeSend?.(key);
          return key;
        },
      });
      const format = formatOfMime(result.mimeType);
      if (!format)
        throw new RmbgError(
          'upstream_error',
          `the API server answered with ${result.mimeType}, not a PNG, JPG or WebP image`,
        );
      return {
        data: result.data,
        format,
        width: result.width,
        height: result.height,
        creditsCharged: result.creditsCharged,
        replayed: result.replayed,
        token: key,
        foreground: result.foreground,
      };
    },
    creditsLeft: () =>
      client.getAccount({ signal: AbortSignal.timeout(BALANCE_TIMEOUT_MS) }).then(
        (account) => account.data.attributes.credits.total,
        () => undefined,
      ),
    close: async () => undefined,
  };
}
