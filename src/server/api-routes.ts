// The API's routes: POST /v1.0/removebg (request in, image or JSON out), GET /v1.0/account and
// GET /v1.0/openapi.json. Errors leave through error-reply.ts, like every other error of the server.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { RmbgError } from '../api/errors.js';
import { openApiDocument } from '../api/openapi.js';
import { parseRemoveRequest, requestEncodingOf, type ParsedRemoveRequest } from '../api/request-parsing.js';
import { HEADERS } from '../api/response-headers.js';
import type { AccountRecord, RemoveResultJson } from '../api/wire-types.js';
import type { RemoveOutcome, RequestBody, Service } from '../service/index.js';
import type { UploadPlaces } from '../service/upload-places.js';
import { whenAnswerGone } from './answer-gone.js';
import type { AnswerSends } from './answer-sends.js';
import { watchBodyPace } from './body-pace.js';
import { contentLengthOf, headerValue, rateLimitHeaders } from './headers.js';

export interface ApiRouteOptions {
  service: Pick<Service, 'handleRemoveRequest' | 'getAccount'>;
  /** Time a client has to send the whole request body before 408 request_timeout. */
  bodyTimeoutMs: number;
  /** The upload places: request bodies being read at once, a share per key. */
  uploads: UploadPlaces;
  /** Answers being sent: no new body is read while they hold the server's budget. */
  answers: Pick<AnswerSends, 'checkRoom'>;
}

export function apiRoutes(options: ApiRouteOptions) {
  return [
    { method: 'POST' as const, url: '/v1.0/removebg', handler: removeBgHandler(options) },
    { method: 'GET' as const, url: '/v1.0/account', handler: accountHandler(options.service) },
    { method: 'GET' as const, url: '/v1.0/openapi.json', handler: openApiHandler() },
  ];
}

// --- POST /v1.0/removebg

/**
 * The service gets the request with its body unread and asks for the body once the key is authenticated and
 * within its limits (readBodyInPlace); the answer's signal fires when the client goes away.
 */
function removeBgHandler({ service, bodyTimeoutMs, uploads, answers }: ApiRouteOptions) {
  return async function handleRemoveBg(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    refuseQueryString(request.url);
    // The content type is a header: refused (415) before the key is looked at, like the query string.
    requestEncodingOf(headerValue(request.headers, 'content-type'));
    const outcome = await service.handleRemoveRequest({
      apiKey: headerValue(request.headers, HEADERS.apiKey),
      idempotencyKey: headerValue(request.headers, HEADERS.idempotencyKey),
      readBody: (keyId) => {
        answers.checkRoom();
        return readBodyInPlace(request, reply, uploads.take(keyId), bodyTimeoutMs);
      },
      requestId: request.id,
      clientAddress: request.ip,
      signal: clientGoneSignal(reply),
      answered: answeredPromise(reply),
    });
    reply.headers(resultHeaders(outcome));
    if (wantsJson(headerValue(request.headers, 'accept'))) {
      return reply.type('application/json; charset=utf-8').send(resultJson(outcome));
    }
    return reply.type(outcome.image.mimeType).send(outcome.image.data);
  };
}

/** The closed schema: a query string (?size=hd) would otherwise be ignored without a word. */
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

/** Reads the body in the upload place taken for it (uploads.take refuses at once when none is free). */
async function readBodyInPlace(
  request: FastifyRequest,
  reply: FastifyReply,
  release: () => void,
  bodyTimeoutMs: number,
): Promise<RequestBody> {
  try {
    // The client waits for this before sending its body (build-app.ts lets it wait until now).
    if (headerValue(request.headers, 'expect')?.toLowerCase() === '100-continue') reply.raw.writeContinue();
    return await parseWithin(request, bodyTimeoutMs);
  } finally {
    release();
  }
}

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
  // A body dripping slower than the floor is cut before the timeout: it holds an upload place meanwhile.
  const stopPace = watchBodyPace(request.raw, (reason) => deadline.abort(reason));
  try {
    return await parseRemoveRequest({
      contentType: headerValue(request.headers, 'content-type'),
      contentLength: contentLengthOf(request.headers),
      body: request.raw,
      signal: deadline.signal,
    });
  } finally {
    clearTimeout(timer);
    stopPace();
  }
}

/** Aborts when the connection closes before the answer was sent: nobody is left to receive the result. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  // 'finish' on a live socket: the whole answer handed to the kernel. A socket the client closed also ends the
  // response with 'finish', destroyed by then; writableFinished cannot tell them apart.
  const socket = reply.raw.socket;
  let sent = false;
  reply.raw.once('finish', () => (sent = socket?.destroyed === false));
  reply.raw.once('close', () => {
    if (!sent) gone.abort(new RmbgError('interrupted', 'the client closed the connection before the result was sent'));
  });
  return gone.signal;
}

/**
 * Settles once the answer was handed to the kernel or its connection closed, pipelined or not (the send timeouts
 * bound both): the key's place in flight is held until then.
 */
function answeredPromise(reply: FastifyReply): Promise<void> {
  return new Promise((resolve) => whenAnswerGone(reply.raw, resolve));
}

/** Every header value is a string, as the spec asks; X-Idempotent-Replayed only on replays. */
function resultHeaders(outcome: RemoveOutcome): Record<string, string> {
  const { image } = outcome;
  const headers: Record<string, string> = {
    [HEADERS.width]: String(image.width),
    [HEADERS.height]: String(image.height),
    [HEADERS.creditsCharged]: String(outcome.creditsCharged),
    [HEADERS.requestId]: outcome.requestId,
    [HEADERS.foregroundTop]: String(image.foreground.top),
    [HEADERS.foregroundLeft]: String(image.foreground.left),
    [HEADERS.foregroundWidth]: String(image.foreground.width),
    [HEADERS.foregroundHeight]: String(image.foreground.height),
    ...rateLimitHeaders(outcome.rateLimit),
  };
  if (image.confidence !== undefined) headers[HEADERS.confidence] = String(image.confidence);
  if (outcome.replayed) headers[HEADERS.replayed] = 'true';
  return headers;
}

function resultJson(outcome: RemoveOutcome): RemoveResultJson {
  const { image } = outcome;
  return {
    data: {
      result_b64: image.data.toString('base64'),
      result_width: image.width,
      result_height: image.height,
      credits_charged: outcome.creditsCharged,
      foreground_top: image.foreground.top,
      foreground_left: image.foreground.left,
      foreground_width: image.foreground.width,
      foreground_height: image.foreground.height,
    },
  };
}

/** Any media range application/json with q above 0; wildcards do not count, so browsers and curl get the image. */
function wantsJson(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    if (type !== 'application/json') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

// --- GET /v1.0/account: the caller's credit balance, with the rate-limit headers of the call.

function accountHandler(service: Pick<Service, 'getAccount'>) {
  return async function getAccount(request: FastifyRequest, reply: FastifyReply): Promise<AccountRecord> {
    const outcome = await service.getAccount(headerValue(request.headers, HEADERS.apiKey), request.id, request.ip);
    reply.headers(rateLimitHeaders(outcome.rateLimit));
    reply.type('application/json; charset=utf-8');
    return outcome.account;
  };
}

// --- GET /v1.0/openapi.json, rendered once.

function openApiHandler() {
  const document = JSON.stringify(openApiDocument());
  return async (_request: FastifyRequest, reply: FastifyReply) =>
    reply.type('application/json; charset=utf-8').send(document);
}
