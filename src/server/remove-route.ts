// POST /v1.0/removebg: parse the body within the body timeout, hand the request to the service with a
// signal that fires when the client goes away, and answer with image bytes or the JSON result.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { RmbgError } from '../api/errors.js';
import { parseRemoveRequest, type ParsedRemoveRequest } from '../api/request-parsing.js';
import { HEADERS } from '../api/response-headers.js';
import type { Service } from '../service/index.js';
import { contentLengthOf, headerValue } from './request-headers.js';
import { resultHeaders, resultJson, wantsJson } from './result-response.js';

async function parseWithin(request: FastifyRequest, bodyTimeoutMs: number): Promise<ParsedRemoveRequest> {
  const deadline = new AbortController();
  const timer = setTimeout(
    () =>
      deadline.abort(
        new RmbgError('request_timeout', `the request body was not received within ${bodyTimeoutMs / 1000} s; send it without pauses (the server's --body-timeout)`),
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
    if (!reply.raw.writableFinished) gone.abort(new RmbgError('interrupted', 'the client closed the connection before the result was sent'));
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
  throw new RmbgError('invalid_request', `POST /v1.0/removebg takes its fields in the request body, not in the query string; got '?${shown}'`);
}

export function removeBackgroundHandler(service: Pick<Service, 'removeBackground'>, bodyTimeoutMs: number) {
  return async function removeBackground(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    refuseQueryString(request.url);
    const { source, options } = await parseWithin(request, bodyTimeoutMs);
    const outcome = await service.removeBackground({
      apiKey: headerValue(request.headers, HEADERS.apiKey),
      idempotencyKey: headerValue(request.headers, HEADERS.idempotencyKey),
      source,
      options,
      requestId: request.id,
      signal: clientGoneSignal(reply),
    });
    reply.headers(resultHeaders(outcome));
    if (wantsJson(headerValue(request.headers, 'accept'))) {
      return reply.type('application/json; charset=utf-8').send(resultJson(outcome));
    }
    return reply.type(outcome.image.mimeType).send(outcome.image.data);
  };
}
