// POST /v1.0/removebg: hand the request to the service with its body unread; the service asks for the body
// once the key is authenticated and within its limits, and it is then parsed within the body timeout and a
// bounded number of uploads at once. A signal fires when the client goes away. Answers image bytes or JSON.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { RmbgError } from '../api/errors.js';
import { parseRemoveRequest, type ParsedRemoveRequest } from '../api/request-parsing.js';
import { requestEncodingOf } from '../api/request-content-type.js';
import { HEADERS } from '../api/response-headers.js';
import type { RequestBody, Service } from '../service/index.js';
import type { Slots } from '../service/slots.js';
import { contentLengthOf, headerValue } from './request-headers.js';
import { resultHeaders, resultJson, wantsJson } from './result-response.js';

async function parseWithin(request: FastifyRequest, bodyTimeoutMs: number): Promise<ParsedRemoveRequest> {
  const deadline = new AbortController();
  const timer = setTimeout(
    () =>
      deadline.abort(
        new RmbgError(
          'request_timeout',
          `the request body was not received within ${bodyTimeoutMs / 1000} s; send it without pauses (the server's --body-timeout)`,
        ),
      ),
    bodyTimeoutMs,
  );
  try {
    return await parseRemoveRequest({
      contentType: headerValue(request.headers, 'content-type'),
      contentLength: contentLengthOf(request.headers),
      body: request.raw,
      signal: deadline.signal,
    });
  } finally {
    clearTimeout(timer);
  }
}

/** Aborts when the connection closes before the answer was sent: nobody is left to receive the result. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished)
      gone.abort(new RmbgError('interrupted', 'the client closed the connection before the result was sent'));
  });
  return gone.signal;
}

/**
 * The fields are read from the body only. A query string (?size=hd, ?shadow=1) would otherwise be ignored
 * without a word, which the closed schema forbids: it is refused rather than silently dropped.
 */
function refuseQueryString(url: string): void {
  const mark = url.indexOf('?');
  const query = mark === -1 ? '' : url.slice(mark + 1);
  if (query === '') return;
  const shown = query.length > 60 ? `${query.slice(0, 60)}…` : query;
  throw new RmbgError(
    'invalid_request',
    `POST /v1.0/removebg takes its fields in the request body, not in the query string; got '?${shown}'`,
  );
}

/** Retry-After when every upload place is taken: an upload takes a second or two on a fast link. */
const UPLOADS_RETRY_SECONDS = 2;

/** Reads the body in one of the upload places, or refuses at once (503) when all are taken. */
async function readBodyInPlace(
  request: FastifyRequest,
  reply: FastifyReply,
  uploads: Slots,
  bodyTimeoutMs: number,
): Promise<RequestBody> {
  const release = uploads.tryTake();
  if (!release) {
    throw new RmbgError(
      'service_busy',
      `${uploads.size} request bodies are being received (the most at once); retry shortly`,
      {
        retryAfterSeconds: UPLOADS_RETRY_SECONDS,
      },
    );
  }
  try {
    // The client waits for this before sending its body (src/server/build-app.ts lets it wait until now).
    if (headerValue(request.headers, 'expect')?.toLowerCase() === '100-continue') reply.raw.writeContinue();
    return await parseWithin(request, bodyTimeoutMs);
  } finally {
    release();
  }
}

export function removeBackgroundHandler(
  service: Pick<Service, 'removeBackground'>,
  limits: { bodyTimeoutMs: number; uploads: Slots },
) {
  return async function removeBackground(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    refuseQueryString(request.url);
    // The content type is a header: refused (415) before the key is looked at, like the query string.
    requestEncodingOf(headerValue(request.headers, 'content-type'));
    const outcome = await service.removeBackground({
      apiKey: headerValue(request.headers, HEADERS.apiKey),
      idempotencyKey: headerValue(request.headers, HEADERS.idempotencyKey),
      readBody: () => readBodyInPlace(request, reply, limits.uploads, limits.bodyTimeoutMs),
      requestId: request.id,
      clientAddress: request.ip,
      signal: clientGoneSignal(reply),
    });
    reply.headers(resultHeaders(outcome));
    if (wantsJson(headerValue(request.headers, 'accept'))) {
      return reply.type('application/json; charset=utf-8').send(resultJson(outcome));
    }
    return reply.type(outcome.image.mimeType).send(outcome.image.data);
  };
}
