// The one way an error leaves the server: status, the spec's error body, X-Request-ID, rate-limit
// headers and Retry-After; and the unread rest of a request body is discarded, or its connection closed.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS } from '../api/errors.js';
import { HEADERS } from '../api/response-headers.js';
import { rateLimitHeaders } from './rate-limit-headers.js';
import { closeOrDiscardUnreadBody } from './unread-body.js';
import { hiddenDetailOf, toWireError } from './wire-error.js';

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
