// Turns what went wrong on the wire into RmbgError: the spec's error body, bodies that are not the
// spec's (proxies, HTML pages), network failures and time-outs. The server's HTTP status is kept.

import { isErrorCode, RmbgError } from '../api/errors.js';
import { HEADERS } from '../api/response-headers.js';
import { rateLimitFrom, type ResponseHeaders } from './response-values.js';
import { printable } from './client-safety.js';
import { parseRetryAfter } from './retry-after.js';

/** How much of a non-JSON error body is quoted in the message. */
const QUOTE_CHARS = 200;

interface SpecErrorBody {
  errors: Array<{ title?: unknown; code?: unknown; detail?: unknown }>;
}

function isSpecErrorBody(value: unknown): value is SpecErrorBody {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as SpecErrorBody).errors) &&
    (value as SpecErrorBody).errors.length > 0
  );
}

/** An error response (status >= 400, or a body the client cannot use) as RmbgError. */
export function errorFromResponse(status: number, headers: ResponseHeaders, body: string, nowMs: number): RmbgError {
  // Retry-After and X-RateLimit-* are kept, so the retry layer can wait and a caller can report.
  const retryAfterSeconds = parseRetryAfter(headers[HEADERS.retryAfter.toLowerCase()], nowMs);
  const options = { status, retryAfterSeconds, rateLimit: rateLimitFrom(headers) };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  if (!isSpecErrorBody(parsed)) {
    const quoted = printable(body.trim().slice(0, QUOTE_CHARS)).replace(/\s+/g, ' ');
    return new RmbgError(
      'upstream_error',
      `API server answered HTTP ${status} without the error body of the API spec${quoted ? `: ${quoted}` : ''}`,
      options,
    );
  }
  const first = parsed.errors[0] ?? {};
  // The server's words end up on a terminal: no escape sequences, bells or carriage returns get through.
  const serverCode = typeof first.code === 'string' ? printable(first.code).slice(0, 64) : '';
  const title = typeof first.title === 'string' ? printable(first.title) : '';
  const detail = typeof first.detail === 'string' ? printable(first.detail) : '';
  const text = detail || title || `HTTP ${status}`;
  if (isErrorCode(serverCode)) return new RmbgError(serverCode, text, options);
  return new RmbgError('upstream_error', `${text} (HTTP ${status}, server code '${serverCode || 'none'}')`, options);
}

/** A failure before a response arrived: refused, reset, closed socket, DNS, or our own time-out. */
export function errorFromNetwork(cause: unknown, url: string, timedOutAfterMs?: number): RmbgError {
  if (timedOutAfterMs !== undefined) {
    return new RmbgError('network_error', `no complete answer from ${url} within ${formatSeconds(timedOutAfterMs)} s`, {
      cause: Object.assign(new Error('client timeout'), { code: 'ETIMEDOUT' }),
    });
  }
  const code = (cause as { code?: unknown } | undefined)?.code;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new RmbgError(
    'network_error',
    `could not reach ${url}: ${reason}${typeof code === 'string' ? ` (${code})` : ''}`,
    { cause },
  );
}

function formatSeconds(ms: number): string {
  return (ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1);
}
