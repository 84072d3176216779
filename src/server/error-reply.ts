// The one way an error leaves the server: anything thrown becomes the RmbgError a client may see (toWireError),
// sent with its status, the spec's error body, X-Request-ID, rate-limit headers and Retry-After; the unread rest
// of a request body is discarded, or its connection closed.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientDetailOf, ERRORS, RmbgError, wireCodeOf, type ErrorCode } from '../api/errors.js';
import { HEADERS } from '../api/response-headers.js';
import { LogOnlyReason } from '../api/log-only-reason.js';
import { rateLimitHeaders } from './headers.js';
import { closeOrDiscardUnreadBody } from './unread-body.js';

export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const failure = toWireError(error);
  // A bug (500) is an error; a failed or timed-out image is worth a warning; the rest are the client's.
  // What the client may not read (paths, raw library text) is logged here, with the request id.
  const hidden = hiddenDetailOf(error);
  const logged = { code: failure.code, requestId: request.id, ...(hidden === undefined ? {} : { detail: hidden }) };
  if (failure.status === 500) request.log.error({ ...logged, err: error }, failure.message);
  else if (failure.status === 502 || failure.status === 504 || hidden !== undefined)
    request.log.warn(logged, failure.message);
  reply.code(failure.status).headers(rateLimitHeaders(failure.rateLimit));
  if (!reply.hasHeader(HEADERS.requestId)) reply.header(HEADERS.requestId, request.id);
  // Only codes whose row says so carry Retry-After: the same column declares it in the OpenAPI document.
  if (ERRORS[failure.code].retryAfter && failure.retryAfterSeconds !== undefined)
    reply.header(HEADERS.retryAfter, String(failure.retryAfterSeconds));
  if (closeOrDiscardUnreadBody(request.raw, failure)) reply.header('Connection', 'close');
  return reply.type('application/json; charset=utf-8').send(failure.toBody());
}

// --- From anything thrown to what the client sees: fastify's errors become API codes, local-only codes the
// API code the error table names, unknown failures stay opaque, and a message the table keeps from clients
// (paths, raw library text) is replaced by its stable detail.

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
function hiddenDetailOf(error: unknown): string | undefined {
  // Anything else is a 500 whose whole error is logged as such.
  if (!(error instanceof RmbgError)) return undefined;
  if (error.cause instanceof LogOnlyReason) return error.cause.message;
  return clientDetailOf(error.code, error.message) === error.message ? undefined : error.message;
}

function toWireError(error: unknown): RmbgError {
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
