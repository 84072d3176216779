// The Remover for an API server; the Idempotency-Key is its token, so a re-run is replayed instead of charged.

import { asksToSlowDown, policyOf, RmbgError } from '../api/errors.js';
import { formatOfMime } from '../api/media-types.js';
import { LIMIT_TEXT, LIMITS } from '../api/limits.js';
import type { RemoveOptions } from '../api/options.js';
import { createApiClient, type ApiClient, type RemoveResult } from '../client/api-client.js';
import { idempotencyKeyFor } from '../client/idempotency-key.js';
import { type PhotoReading, uploadOf } from './photo-conversion.js';
import { refuseLocalOnly, type RemoveCall, type RemovedImage, type Remover } from './remover.js';

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

/** A key sent longer ago than the server's retention less this margin may be forgotten (its clock is not ours). */
const RETENTION_MARGIN_MS = 60 * 60 * 1000;

function forgotten(sentAt: number | undefined, now = Date.now()): boolean {
  return sentAt !== undefined && now - sentAt >= LIMITS.idempotencyKeyRetentionMs - RETENTION_MARGIN_MS;
}

/** How a key shows in the settings a batch reports: its last four characters, enough to tell keys apart. */
export const keyEnd = (apiKey: string): string => `…${apiKey.slice(-4)}`;

export function remoteRemover(options: {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  /** How a photo the API does not take is read before its upload (a RAW's preview or development). */
  reading?: PhotoReading;
}): RemoteRemover {
  const listeners: Array<() => void> = [];
  const { reading = {}, ...connection } = options;
  const client = createApiClient({
    ...connection,
    onRetry: (info) => {
      if (asksToSlowDown(info.error)) for (const listener of listeners) listener();
    },
  });
  return {
    mode: 'remote',
    client,
    settings: { apiUrl: options.baseUrl, apiKey: keyEnd(options.apiKey), timeoutMs: options.timeoutMs },
    retryReviewRefusal:
      '--retry-review runs the flagged cutouts again with another model on this computer; add --local and --model NAME (a server chooses its own model)',
    refuseOutputs: refuseLocalOnly,
    onThrottle: (listener) => listeners.push(listener),
    async remove(image, removeOptions, call) {
      // Same request as an earlier run: keep its key, so a request the server already charged is replayed for free.
      let generation = call.earlier ? generationOf(image, removeOptions, call.earlier.token) : 0;
      let key = keyOf(image, removeOptions, generation);
      // Sent again this long after, the key may be new to the server: a second charge.
      if (sentWithoutResult(call, key) && forgotten(call.earlier?.sentAt)) throw keyForgottenError();
      // A HEIC, AVIF, TIFF or RAW is converted here; its key stays the file's own, whatever its conversion's bytes.
      const upload = await uploadOf(image, reading);
      await call.beforeSend?.(key);
      const result = await client.postRemoveBg(upload, removeOptions, {
        idempotencyKey: key,
        signal: call.signal,
        filename: call.filename,
        renewIdempotencyKey: async (error) => {
          // The server charged the earlier run's key and no longer keeps its result: a fresh key pays again.
          if (policyOf(error.code).newKeyPaysAgain && sentWithoutResult(call, key)) throw paidBeforeError(error);
          if (generation >= MAX_KEY_GENERATION) return undefined;
          generation += 1;
          key = keyOf(image, removeOptions, generation);
          await call.beforeSend?.(key);
          return key;
        },
      });
      return removedImage(result, key);
    },
    creditsLeft: () =>
      client.getAccount({ signal: AbortSignal.timeout(BALANCE_TIMEOUT_MS) }).then(
        (account) => account.data.attributes.credits.total,
        () => undefined,
      ),
    close: async () => undefined,
  };
}

/** An earlier run sent `key` and recorded no result for it (killed, or its answer lost), and no --retry-failed. */
function sentWithoutResult(call: RemoveCall, key: string): boolean {
  const { earlier } = call;
  return earlier !== undefined && !earlier.finished && earlier.token === key && !call.payAgain;
}

function keyForgottenError(): RmbgError {
  return new RmbgError(
    'idempotency_key_expired',
    `an earlier run sent this image more than ${LIMIT_TEXT.idempotencyKeyRetention} ago without receiving the result; ` +
      'the server may have charged for it and no longer remembers the request; ' +
      'run again with --retry-failed to pay for it again',
    { status: 409 },
  );
}

function paidBeforeError(error: RmbgError): RmbgError {
  return new RmbgError(
    error.code,
    `the server charged for this image in an earlier run more than ${LIMIT_TEXT.replayWindow} ago ` +
      'and can no longer replay the result; run again with --retry-failed to pay for it again',
    { status: error.status, cause: error },
  );
}

function removedImage(result: RemoveResult, key: string): RemovedImage {
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
    confidence: result.confidence,
  };
}
