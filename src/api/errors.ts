// The error catalogue: every failure rmbg reports, with its stable code, HTTP status and title.
// One error type serves the engine, the service, the HTTP adapter and the CLI (which maps it to exit codes).

export const ERROR_CATALOGUE = {
  // 400: the request or the image is not acceptable
  invalid_request: { status: 400, title: 'The request is malformed' },
  missing_image_source: { status: 400, title: 'No image source given' },
  multiple_image_sources: { status: 400, title: 'More than one image source given' },
  unknown_field: { status: 400, title: 'Unknown field' },
  unsupported_parameter: { status: 400, title: 'Unsupported parameter' },
  invalid_option: { status: 400, title: 'Invalid option value' },
  invalid_base64: { status: 400, title: 'image_file_b64 is not valid base64' },
  invalid_idempotency_key: { status: 400, title: 'Invalid Idempotency-Key' },
  file_too_large: { status: 400, title: 'Image data exceeds 22 MiB' },
  unsupported_image_format: { status: 400, title: 'Unsupported image format' },
  animated_image: { status: 400, title: 'Animated images are not supported' },
  corrupt_image: { status: 400, title: 'The image is truncated or corrupt' },
  image_dimensions_out_of_range: { status: 400, title: 'Image dimensions out of range' },
  image_too_many_pixels: { status: 400, title: 'Image exceeds 50 megapixels' },
  invalid_image_url: { status: 400, title: 'image_url is not allowed' },
  image_url_unreachable: { status: 400, title: 'image_url could not be fetched' },
  // 402, 403: account
  insufficient_credits: { status: 402, title: 'Insufficient credits' },
  missing_api_key: { status: 403, title: 'X-API-Key header missing' },
  invalid_api_key: { status: 403, title: 'Invalid API key' },
  plan_without_api_access: { status: 403, title: 'The plan has no API access' },
  // 404, 405: routing (not in the spec's table; a careful API still answers them with the error body)
  not_found: { status: 404, title: 'No such endpoint' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  // 408
  request_timeout: { status: 408, title: 'Request body not received in time' },
  // 409: idempotency
  idempotency_in_progress: { status: 409, title: 'A request with this Idempotency-Key is in progress' },
  idempotency_key_mismatch: { status: 409, title: 'Idempotency-Key was used for a different request' },
  idempotency_key_expired: { status: 409, title: 'Idempotency-Key expired' },
  idempotency_key_failed: { status: 409, title: 'Idempotency-Key belongs to a failed request' },
  // 415
  unsupported_content_type: { status: 415, title: 'Unsupported content type' },
  // 429
  rate_limited: { status: 429, title: 'Rate limit exceeded' },
  // 5xx
  internal_error: { status: 500, title: 'Internal error' },
  processing_failed: { status: 502, title: 'Processing failed' },
  service_busy: { status: 503, title: 'Service busy' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
  processing_timeout: { status: 504, title: 'Processing timed out' },
  // Local only (never on the wire): the CLI and the engine's own environment
  usage_error: { status: 400, title: 'Invalid command line' },
  model_unavailable: { status: 500, title: 'Model weights missing or corrupt' },
  io_error: { status: 500, title: 'File system error' },
  network_error: { status: 502, title: 'Network error' },
  upstream_error: { status: 502, title: 'Unexpected answer from the API server' },
  interrupted: { status: 503, title: 'Interrupted' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CATALOGUE, value);
}

export interface ErrorOptions {
  cause?: unknown;
  /** Seconds a client should wait before retrying (429, 503). */
  retryAfterSeconds?: number;
  /** Overrides the catalogue's status, for errors relayed from a remote server. */
  status?: number;
  /** Response headers that belong to this error (e.g. X-RateLimit-*), set by the service. */
  headers?: Record<string, string>;
}

export class RmbgError extends Error {
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;
  headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: ErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RmbgError';
    this.status = options.status ?? ERROR_CATALOGUE[code].status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.headers = { ...options.headers };
  }

  get title(): string {
    return ERROR_CATALOGUE[this.code].title;
  }

  /** The spec's error body. `detail` carries our message: extra members are allowed, title and code are required. */
  toBody(): { errors: Array<{ title: string; code: string; detail: string }> } {
    return { errors: [{ title: this.title, code: this.code, detail: this.message }] };
  }
}

/** Wraps anything thrown into an RmbgError, keeping the original as cause. */
export function toRmbgError(error: unknown, fallback: ErrorCode = 'internal_error'): RmbgError {
  if (error instanceof RmbgError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new RmbgError(fallback, message, { cause: error });
}

/**
 * The local-only codes (the catalogue's last group) and what the HTTP API answers instead if one reaches it,
 * so a client only ever sees codes of the API (a cancelled request, a missing model: the service is unavailable).
 */
export const WIRE_CODE_OF_LOCAL = {
  usage_error: 'invalid_request',
  model_unavailable: 'service_unavailable',
  io_error: 'internal_error',
  network_error: 'processing_failed',
  upstream_error: 'processing_failed',
  interrupted: 'service_unavailable',
} as const satisfies Partial<Record<ErrorCode, ErrorCode>>;
