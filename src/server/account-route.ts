// GET /v1.0/account: the caller's credit balance, with the rate-limit headers of the call.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { HEADERS } from '../api/response-headers.js';
import type { AccountRecord } from '../api/wire-types.js';
import type { Service } from '../service/index.js';
import { rateLimitHeaders } from './rate-limit-headers.js';
import { headerValue } from './request-headers.js';

export function accountHandler(service: Pick<Service, 'getAccount'>) {
  return async function getAccount(request: FastifyRequest, reply: FastifyReply): Promise<AccountRecord> {
    const outcome = await service.getAccount(headerValue(request.headers, HEADERS.apiKey), request.id, request.ip);
    reply.headers(rateLimitHeaders(outcome.rateLimit));
    reply.type('application/json; charset=utf-8');
    return outcome.account;
  };
}
