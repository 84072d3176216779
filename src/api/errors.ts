// The error table: every failure rmbg reports, declared once with its whole behaviour. Every other module
// reads its decisions here (the HTTP status and headers in src/server, retries in src/client, the batch's
// next-run / stop / new-key / slow-down decisions, the CLI's exit code); none keeps its own list of codes.
// Each row must state every decision: a code added without one does not compile.

import { LIMIT_TEXT } from './limits.js';
import type { RateLimitInfo } from './wire-types.js';

/** The CLI exit code an error leads to (the numbers are in src/cli/exit-codes.ts). */
export type ExitKind = 'failed' | 'usage' | 'interrupted';

/**
 * `'by-status'`: the error stands for an answer the client could not read (upstream_error), so the HTTP
 * status the server sent decides (408, 429, 5xx are transient; 429 and 503 ask to slow down).
 */
export type StatusDecision = boolean | 'by-status';

export interface ErrorPolicy {
  /** HTTP status (a relayed error keeps the remote server's). */
  status: number;
  title: string;
  /** 'self' for codes of the API; a local-only code names the API code the server answers instead. */
  wire: 'self' | string;
  /** Sent with Retry-After by the server (and so declared in the OpenAPI document). */
  retryAfter: boolean;
  /** The server closes the connection instead of reading the rest of the body (too large, too slow). */
  closesConnection: boolean;
  /** Retry now: the client repeats the call (if it is repeatable) under its retry policy. */
  transient: StatusDecision;
  /** The batch tells the client to slow down (lower its concurrency) when a retry was for this error. */
  slowsDown: StatusDecision;
  /** The batch sends the file again on the next run without --retry-failed. */
  retryNextRun: boolean;
  /** Every other file of the batch would fail the same way: the batch stops. */
  stopsBatch: boolean;
  /** The server keeps the Idempotency-Key reserved: the remote remover derives a fresh one and tries again. */
  needsNewKey: boolean;
  /** A failed authentication: counted toward the per-address auth-failure throttle of the server. */
  authFailure: boolean;
  /**
   * The retry waits for the first request with the same Idempotency-Key to finish (it is running and charged):
   * bounded by the client's in-progress wait time, with short backoffs, not by its attempt count.
   */
  waitsForFirst: boolean;
  /**
   * With needsNewKey: the server charged for the old key and no longer keeps its result, so a fresh key pays
   * again. The remote remover does that for a file only when asked (--retry-failed).
   */
  newKeyPaysAgain: boolean;
  /** When this error stops a batch, the CLI asks the server for the account's balance and shows it. */
  reportsBalance: boolean;
  /**
   * What a client of the server reads as the error's detail: `'message'` when the error's own message is
   * written for clients; otherwise this fixed text, because the message may carry file paths or raw
   * library text (libvips, onnxruntime, SQLite). The message then goes to the server's log with the
   * request id. Local callers (CLI, library) still see the message.
   */
  detail: 'message' | string;
  exit: ExitKind;
}

// Column defaults are deliberately absent: each row spells out every decision.
const no = false;
const yes = true;
const own = 'message';

// One row per error code; in a row, a line per reader: what the response says (status, title, wire code, CLI
// exit), its detail, the server's handling, the client's retries, the batch's. Short lines, so a diff shows
// which decision changed.
// biome-ignore format: the row's lines are grouped by reader, as the comment above says
export const ERRORS = {
  // 400: the request or the image is not acceptable
  invalid_request: {
    status: 400, title: 'The request is malformed', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  missing_image_source: {
    status: 400, title: 'No image source given', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  multiple_image_sources: {
    status: 400, title: 'More than one image source given', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  unknown_field: {
    status: 400, title: 'Unknown field', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  unsupported_parameter: {
    status: 400, title: 'Unsupported parameter', wire: 'self', exit: 'usage',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  invalid_option: {
    status: 400, title: 'Invalid option value', wire: 'self', exit: 'usage',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  invalid_base64: {
    status: 400, title: 'image_file_b64 is not valid base64', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  invalid_idempotency_key: {
    status: 400, title: 'Invalid Idempotency-Key', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  file_too_large: {
    status: 400, title: `Image data exceeds ${LIMIT_TEXT.maxImageBytes}`, wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: yes, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  unsupported_image_format: {
    status: 400, title: 'Unsupported image format', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  animated_image: {
    status: 400, title: 'Animated images are not supported', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  corrupt_image: {
    status: 400, title: 'The image is truncated or corrupt', wire: 'self', exit: 'failed',
    detail: 'the image could not be decoded: it is truncated or corrupt; check that the file opens in an image viewer',
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  image_dimensions_out_of_range: {
    status: 400, title: 'Image dimensions out of range', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  image_too_many_pixels: {
    status: 400, title: `Image exceeds ${LIMIT_TEXT.maxPixels}`, wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  invalid_image_url: {
    status: 400, title: 'image_url is not allowed', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  image_url_unreachable: {
    status: 400, title: 'image_url could not be fetched', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  // 402, 403: account (a re-run sends the file again once the account is fixed)
  insufficient_credits: {
    status: 402, title: 'Insufficient credits', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: yes, reportsBalance: yes,
  },
  missing_api_key: {
    status: 403, title: 'X-API-Key header missing', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: yes,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: yes, reportsBalance: no,
  },
  invalid_api_key: {
    status: 403, title: 'Invalid API key', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: yes,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: yes, reportsBalance: no,
  },
  plan_without_api_access: {
    status: 403, title: 'The plan has no API access', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: yes, reportsBalance: no,
  },
  // 404, 405: routing (not in the spec's table; a careful API still answers them with the error body)
  not_found: {
    status: 404, title: 'No such endpoint', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  method_not_allowed: {
    status: 405, title: 'Method not allowed', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  // 408
  request_timeout: {
    status: 408, title: 'Request body not received in time', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: yes, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  // 409: idempotency. In progress: the first request is running and charged, so waiting for it is the point.
  idempotency_in_progress: {
    status: 409, title: 'A request with this Idempotency-Key is in progress', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: yes, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: yes, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  idempotency_key_mismatch: {
    status: 409, title: 'Idempotency-Key was used for a different request', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: yes, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  idempotency_key_expired: {
    status: 409, title: 'Idempotency-Key expired', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: yes, newKeyPaysAgain: yes,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  // A 5xx retried under the same key meets the key the server failed (and refunded): the cause was transient.
  idempotency_key_failed: {
    status: 409, title: 'Idempotency-Key belongs to a failed request', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: yes, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  // 415
  unsupported_content_type: {
    status: 415, title: 'Unsupported content type', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  // 429
  rate_limited: {
    status: 429, title: 'Rate limit exceeded', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: yes, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: yes, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  // 5xx
  internal_error: {
    status: 500, title: 'Internal error', wire: 'self', exit: 'failed',
    detail: 'the server failed unexpectedly; report this with the X-Request-ID of the response',
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  processing_failed: {
    status: 502, title: 'Processing failed', wire: 'self', exit: 'failed',
    detail: 'the model could not process this image; retry, and report it with the X-Request-ID if it keeps failing',
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  service_busy: {
    status: 503, title: 'Service busy', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: yes, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: yes, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  // Its messages may quote the database's own text (host, port, user name): the log gets them, not the caller.
  service_unavailable: {
    status: 503, title: 'Service unavailable', wire: 'self', exit: 'failed',
    detail: 'the service cannot answer right now (its store is unreachable or busy, or it is restarting); retry after the seconds in Retry-After',
    retryAfter: yes, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: yes, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  processing_timeout: {
    status: 504, title: 'Processing timed out', wire: 'self', exit: 'failed',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  // Local only (never on the wire): the CLI and the engine's own environment
  usage_error: {
    status: 400, title: 'Invalid command line', wire: 'invalid_request', exit: 'usage',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: no, stopsBatch: no, reportsBalance: no,
  },
  model_unavailable: {
    status: 500, title: 'Model weights missing or corrupt', wire: 'service_unavailable', exit: 'failed',
    detail: 'the server cannot run its model right now; retry shortly',
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: yes, reportsBalance: no,
  },
  // A catalogue model asked for by name that `rmbg models pull` has not brought yet: the message gives the command.
  model_not_pulled: {
    status: 500, title: 'Model not pulled', wire: 'service_unavailable', exit: 'usage',
    detail: 'the server cannot run its model right now; retry shortly',
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: yes, reportsBalance: no,
  },
  // An explicit GPU that is missing or broken: never answered by running on the CPU instead.
  device_unavailable: {
    status: 500, title: 'The GPU is not available', wire: 'service_unavailable', exit: 'failed',
    detail: 'the server cannot run its model on its GPU right now',
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: yes, reportsBalance: no,
  },
  io_error: {
    status: 500, title: 'File system error', wire: 'internal_error', exit: 'failed',
    detail: 'the server failed unexpectedly; report this with the X-Request-ID of the response',
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  network_error: {
    status: 502, title: 'Network error', wire: 'processing_failed', exit: 'failed',
    detail: 'the image could not be processed; retry',
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: yes, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  upstream_error: {
    status: 502, title: 'Unexpected answer from the API server', wire: 'processing_failed', exit: 'failed',
    detail: 'the image could not be processed; retry',
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: 'by-status', waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: 'by-status', retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
  interrupted: {
    status: 503, title: 'Interrupted', wire: 'service_unavailable', exit: 'interrupted',
    detail: own,
    retryAfter: no, closesConnection: no, authFailure: no,
    transient: no, waitsForFirst: no, needsNewKey: no, newKeyPaysAgain: no,
    slowsDown: no, retryNextRun: yes, stopsBatch: no, reportsBalance: no,
  },
} as const satisfies Record<string, ErrorPolicy>;

export type ErrorCode = keyof typeof ERRORS;

/** A local-only code names an API code in its `wire` column; the compiler checks that it is one. */
type WireTarget = Exclude<(typeof ERRORS)[ErrorCode]['wire'], 'self'>;
const wireTargetsAreCodes: WireTarget extends ErrorCode ? true : never = true;
void wireTargetsAreCodes;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERRORS, value);
}

export function policyOf(code: ErrorCode): ErrorPolicy {
  return ERRORS[code];
}

/** Codes a client of the API can receive: every code whose `wire` is itself. */
export function wireErrorCodes(): ErrorCode[] {
  return (Object.keys(ERRORS) as ErrorCode[]).filter((code) => ERRORS[code].wire === 'self');
}

/** The API code the server answers for `code` (itself, or the stand-in of a local-only code). */
export function wireCodeOf(code: ErrorCode): ErrorCode {
  const wire = ERRORS[code].wire;
  return wire === 'self' ? code : wire;
}

/** The detail a client of the server may read for an error of `code` with this message (see ErrorPolicy.detail). */
export function clientDetailOf(code: ErrorCode, message: string): string {
  const detail: string = ERRORS[code].detail;
  return detail === 'message' ? message : detail;
}

/** Statuses that say "try again later" for an answer the client could not read (see StatusDecision). */
const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);
const SLOW_DOWN_STATUSES: ReadonlySet<number> = new Set([429, 503]);

function decide(decision: StatusDecision, status: number, statuses: ReadonlySet<number>): boolean {
  return decision === 'by-status' ? statuses.has(status) : decision;
}

/** Whether another attempt now may succeed (the client still checks that the call is repeatable). */
export function isTransient(error: RmbgError): boolean {
  return decide(ERRORS[error.code].transient, error.status, TRANSIENT_STATUSES);
}

/** Whether the server asked the caller to slow down. */
export function asksToSlowDown(error: RmbgError): boolean {
  return decide(ERRORS[error.code].slowsDown, error.status, SLOW_DOWN_STATUSES);
}

export interface ErrorOptions {
  cause?: unknown;
  /** Seconds a client should wait before retrying (429, 503). */
  retryAfterSeconds?: number | undefined;
  /** Overrides the table's status, for errors relayed from a remote server. */
  status?: number | undefined;
  /** The caller's rate-limit window, when the error came after the request was counted (src/server renders it). */
  rateLimit?: RateLimitInfo | undefined;
}

export class RmbgError extends Error {
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;
  readonly rateLimit: RateLimitInfo | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: ErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RmbgError';
    this.status = options.status ?? ERRORS[code].status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.rateLimit = options.rateLimit;
  }

  get title(): string {
    return ERRORS[this.code].title;
  }

  /** The same error (code, status, cause, Retry-After, rate limit) with some of them replaced. */
  with(changes: ErrorOptions & { message?: string }): RmbgError {
    const { message = this.message, ...options } = changes;
    return new RmbgError(this.code, message, {
      cause: this.cause,
      status: this.status,
      retryAfterSeconds: this.retryAfterSeconds,
      rateLimit: this.rateLimit,
      ...options,
    });
  }

  /** The spec's error body. `detail` carries our message: extra members are allowed, title and code are required. */
  toBody(): { errors: Array<{ title: string; code: string; detail: string }> } {
    return { errors: [{ title: this.title, code: this.code, detail: this.message }] };
  }
}

/** The message of anything thrown: an Error's own, else the value as text (a rejection may carry anything). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Wraps anything thrown into an RmbgError, keeping the original as cause. */
export function toRmbgError(error: unknown, fallback: ErrorCode = 'internal_error'): RmbgError {
  if (error instanceof RmbgError) return error;
  return new RmbgError(fallback, messageOf(error), { cause: error });
}
