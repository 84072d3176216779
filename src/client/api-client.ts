// The HTTP client of any server that speaks the API spec (a remote service or `rmbg serve`): builds the
// requests, reads the answers into typed results, and sends every call through the one retry layer.

import { MAX_RESPONSE_BYTES, readBounded, warnIfKeyInClearText } from './client-safety.js';
import { Blob } from 'node:buffer';
import { FormData, request, Response, type Dispatcher } from 'undici';
import { RmbgError } from '../api/errors.js';
import { HEADERS } from '../api/response-headers.js';
import { MIME_OF_INPUT, mediaTypeOf, supportedFormatOf } from '../api/media-types.js';
import { optionsToFields, validateIdempotencyKey, type RemoveOptions } from '../api/options.js';
import type { AccountRecord, ForegroundBox, RateLimitInfo } from '../api/wire-types.js';
import { endpointUrl, parseBaseUrl } from './endpoint-url.js';
import { errorFromNetwork, errorFromResponse } from './response-errors.js';
import {
  accountRecordFrom,
  confidenceFrom,
  foregroundFrom,
  isReplay,
  rateLimitFrom,
  requestIdOf,
  requiredIntegerHeader,
  type ResponseHeaders,
} from './response-values.js';
import { resolveRetryPolicy, type RetryInfo, type RetryPolicy } from './retry-policy.js';
import { withRetries } from './with-retries.js';

export interface ApiClientOptions {
  /** Base address; `/v1.0` is appended unless the path already ends with it. */
  baseUrl: string;
  apiKey: string;
  /** Limit for one attempt, from sending to the last body byte: the caller's `timeoutMs` row (settings/remove.ts). */
  timeoutMs: number;
  retry?: Partial<RetryPolicy>;
  onRetry?: (info: RetryInfo) => void;
  /** undici dispatcher, e.g. an Agent with other connection limits; default: undici's global one. */
  dispatcher?: Dispatcher;
  /** Largest answer read before upstream_error (default MAX_RESPONSE_BYTES). */
  maxResponseBytes?: number;
  /** Where the once-per-origin warning about a key over plain http goes (default: stderr). */
  warn?: (message: string) => void;
}

export interface RemoveCallOptions {
  /** Makes the POST safe to repeat: retried with this same key, replayed by the server. */
  idempotencyKey?: string;
  /**
   * Asked for a fresh key when the server keeps the current one reserved (expired, failed, or used for a
   * different request); undefined gives up with that error. It may throw to stop with another error.
   */
  renewIdempotencyKey?: (error: RmbgError) => Promise<string | undefined>;
  /** File name of the multipart part; servers may show it in logs. */
  filename?: string;
  signal?: AbortSignal;
}

export interface RemoveResult {
  data: Buffer;
  mimeType: string;
  width: number;
  height: number;
  creditsCharged: number;
  requestId: string;
  /** True when the server replayed an earlier success for this Idempotency-Key (no new charge). */
  replayed: boolean;
  /** Absent when the server does not send the X-Foreground-* headers. */
  foreground: ForegroundBox | undefined;
  /** rmbg's X-Confidence (0..1); absent from a server that does not send it (not 0). */
  confidence: number | undefined;
  rateLimit: RateLimitInfo | undefined;
}

export interface ApiClient {
  /** The normalised base, ending in /v1.0. */
  readonly baseUrl: string;
  postRemoveBg(image: Buffer, options: RemoveOptions, call?: RemoveCallOptions): Promise<RemoveResult>;
  getAccount(call?: { signal?: AbortSignal }): Promise<AccountRecord>;
}

interface Answer {
  status: number;
  headers: ResponseHeaders;
  body: Buffer;
}

interface Call {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: Buffer;
  repeatable: boolean;
  signal: AbortSignal | undefined;
  renewKey?: (error: RmbgError) => Promise<boolean>;
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  const base = parseBaseUrl(options.baseUrl);
  if (!options.apiKey) throw new RmbgError('usage_error', 'an API key is required to call the API');
  const policy = resolveRetryPolicy(options.retry);
  const auth = { [HEADERS.apiKey]: options.apiKey };
  warnIfKeyInClearText(base, options.warn);
  const transport: Transport = {
    timeoutMs: options.timeoutMs,
    maxResponseBytes: options.maxResponseBytes ?? MAX_RESPONSE_BYTES,
    dispatcher: options.dispatcher,
    now: () => policy.now(),
  };

  function send(call: Call): Promise<Answer> {
    return withRetries((_n, remainingMs) => attempt(call, remainingMs, transport), {
      policy,
      repeatable: call.repeatable,
      onRetry: options.onRetry,
      signal: call.signal,
      renewKey: call.renewKey,
    });
  }

  return {
    baseUrl: base.href,

    async postRemoveBg(image, removeOptions, call = {}) {
      const headers: Record<string, string> = { ...auth };
      if (call.idempotencyKey !== undefined)
        headers[HEADERS.idempotencyKey] = validateIdempotencyKey(call.idempotencyKey);
      const renew = call.renewIdempotencyKey;
      const renewKey =
        renew &&
        (async (error: RmbgError) => {
          const next = await renew(error);
          if (next === undefined) return false;
          headers[HEADERS.idempotencyKey] = validateIdempotencyKey(next);
          return true;
        });
      const { body, contentType } = await multipartBody(image, removeOptions, call.filename);
      headers['content-type'] = contentType;
      const answer = await send({
        method: 'POST',
        url: endpointUrl(base, 'removebg'),
        headers,
        body,
        repeatable: call.idempotencyKey !== undefined,
        signal: call.signal,
        renewKey,
      });
      const mimeType = mediaTypeOf(answer.headers['content-type']);
      if (!mimeType.startsWith('image/')) {
        throw new RmbgError(
          'upstream_error',
          `API server answered HTTP ${answer.status} with '${mimeType || 'no content type'}' instead of an image`,
          {
            status: answer.status,
          },
        );
      }
      return {
        data: answer.body,
        mimeType,
        width: requiredIntegerHeader(answer.headers, HEADERS.width),
        height: requiredIntegerHeader(answer.headers, HEADERS.height),
        creditsCharged: requiredIntegerHeader(answer.headers, HEADERS.creditsCharged),
        requestId: requestIdOf(answer.headers),
        replayed: isReplay(answer.headers),
        foreground: foregroundFrom(answer.headers),
        confidence: confidenceFrom(answer.headers),
        rateLimit: rateLimitFrom(answer.headers),
      };
    },

    async getAccount(call = {}) {
      const answer = await send({
        method: 'GET',
        url: endpointUrl(base, 'account'),
        headers: { ...auth, accept: 'application/json' },
        repeatable: true,
        signal: call.signal,
      });
      return accountRecordFrom(answer.body.toString('utf8'));
    },
  };
}

/** What each attempt of a call needs of the client. */
interface Transport {
  timeoutMs: number;
  maxResponseBytes: number;
  dispatcher: Dispatcher | undefined;
  now: () => number;
}

/** One attempt of a call, within `remainingMs` of its retries' time and the client's timeout: the answer, or the
 * error it is (an HTTP error, a redirect, the network's, a cancel). */
async function attempt(call: Call, remainingMs: number, transport: Transport): Promise<Answer> {
  const limitMs = Math.min(transport.timeoutMs, remainingMs);
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), limitMs);
  const signal = call.signal ? AbortSignal.any([call.signal, timeout.signal]) : timeout.signal;
  try {
    const response = await request(call.url, {
      method: call.method,
      headers: call.headers,
      body: call.body,
      signal,
      ...(transport.dispatcher ? { dispatcher: transport.dispatcher } : {}),
    });
    const headers = flattenHeaders(response.headers);
    const body = await readBounded(response.body, headers['content-length'], transport.maxResponseBytes);
    if (response.statusCode >= 300 && response.statusCode < 400) {
      throw new RmbgError(
        'upstream_error',
        `API server answered HTTP ${response.statusCode} (redirect to ${headers.location ?? 'nowhere'}); use the final address as the API URL`,
        { status: response.statusCode },
      );
    }
    if (response.statusCode >= 400)
      throw errorFromResponse(response.statusCode, headers, body.toString('utf8'), transport.now());
    return { status: response.statusCode, headers, body };
  } catch (error) {
    if (error instanceof RmbgError) throw error;
    if (call.signal?.aborted)
      throw new RmbgError('interrupted', `the request to ${call.url} was cancelled`, { cause: call.signal.reason });
    throw errorFromNetwork(error, call.url, timeout.signal.aborted ? limitMs : undefined);
  } finally {
    clearTimeout(timer);
  }
}

/** The multipart body of POST /removebg: the option fields and the image, typed from its bytes. */
async function multipartBody(
  image: Buffer,
  removeOptions: RemoveOptions,
  filename: string | undefined,
): Promise<{ body: Buffer; contentType: string }> {
  // The part's Content-Type from the bytes: the file name may be missing or wrong (e.g. for stdin).
  const sniffed = supportedFormatOf(image);
  const fileType = sniffed ? MIME_OF_INPUT[sniffed] : 'application/octet-stream';
  const form = new FormData();
  for (const [name, value] of Object.entries(optionsToFields(removeOptions))) form.append(name, value);
  form.append('image_file', new Blob([image], { type: fileType }), filename ?? 'image');
  // Sent as bytes, not as the FormData: the global dispatcher may be Node's bundled undici (Node ≥22 installs
  // it on `import 'node:http'` or a fetch()), and from Node 24 on it refuses a FormData of this undici.
  const encoded = new Response(form);
  return {
    body: Buffer.from(await encoded.arrayBuffer()),
    contentType: encoded.headers.get('content-type') ?? 'multipart/form-data',
  };
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): ResponseHeaders {
  const flat: ResponseHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}
