// Turns anything thrown while answering a request into the RmbgError the client sees: fastify's own
// errors become API codes, local-only codes become the API code the error table names, unknown failures
// stay opaque, and a message the table does not let out (paths, raw library text) is replaced by its
// stable detail; hiddenDetailOf() gives what the log gets instead.

import { clientDetailOf, ERRORS, RmbgError, wireCodeOf, type ErrorCode } from '../api/errors.js';

/** Seconds a client should wait when the service is shutting down or cannot run its model. */
const UNAVAILABLE_RETRY_SECONDS = 5;

function fromFramework(error: Error & { statusCode?: number; code?: string }): RmbgError | undefined {
  const byStatus: Partial<Record<number, ErrorCode>> = {
    400: 'invalid_request',
    404: 'not_found',
    405: 'method_not_allowed',
    408: 'request_timeout',
    413: 'file_too_large',
    415: 'unsupported_content_type',
  };
  const code = error.statusCode === undefined ? undefined : byStatus[error.statusCode];
  return code === undefined ? undefined : new RmbgError(code, error.message, { cause: error });
}

/** The message a client must not read but the log should (undefined when the client reads it all). */
export function hiddenDetailOf(error: unknown): string | undefined {
  // Anything else is a 500 whose whole error is logged as such.
  if (!(error instanceof RmbgError)) return undefined;
  return clientDetailOf(error.code, error.message) === error.message ? undefined : error.message;
}

export function toWireError(error: unknown): RmbgError {
  if (error instanceof RmbgError) {
    const wire = wireCodeOf(error.code);
    const message = clientDetailOf(error.code, error.message);
    if (wire === error.code) return message === error.message ? error : error.with({ message, cause: error });
    return new RmbgError(wire, message, {
      cause: error,
      rateLimit: error.rateLimit,
      retryAfterSeconds: error.retryAfterSeconds ?? (ERRORS[wire].retryAfter ? UNAVAILABLE_RETRY_SECONDS : undefined),
    });
  }
  if (error instanceof Error) {
    const framework = fromFramework(error);
    if (framework) return framework;
  }
  return opaqueInternalError(error);
}

function opaqueInternalError(cause: unknown): RmbgError {
  return new RmbgError('internal_error', ERRORS.internal_error.detail, { cause });
}
