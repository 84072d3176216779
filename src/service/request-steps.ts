// The steps of each request, given the service's parts (service-context.ts): the frame of request-lifecycle.ts
// (address throttle, authentication, rate limit, usage record), then the endpoint's own steps. createService
// (the wiring: store, timers, refunder, lease keeper) calls these and tracks them for close().

import { accountRecord } from './get-account.js';
import { processRemoval } from './process-removal.js';
import { handleRequest } from './request-lifecycle.js';
import type { ServiceContext } from './service-context.js';
import type { AccountOutcome, DeferredRemoveRequest, RemoveOutcome, RemoveRequest } from './types.js';

/**
 * POST /removebg: the frame, the key's in-flight cap, and only then the body (a refused caller costs no body
 * read); then the removal itself (idempotency, charge, engine, delivery or refund). The key's place is held until
 * the answer is sent, when the transport says when that is (req.answered).
 */
export function removeRequest(ctx: ServiceContext, req: RemoveRequest | DeferredRemoveRequest): Promise<RemoveOutcome> {
  const frame = {
    apiKey: req.apiKey,
    requestId: req.requestId,
    endpoint: 'removebg' as const,
    clientAddress: req.clientAddress,
  };
  return handleRequest(ctx, frame, async (caller, rateLimit, record, budget) => {
    const leave = ctx.inFlight.enter(caller.keyId, rateLimit);
    try {
      const body = 'readBody' in req ? await req.readBody(caller.keyId) : req;
      record.size = body.options.size;
      record.inputBytes = body.source.kind === 'url' ? null : body.source.data.length;
      return await processRemoval(
        ctx,
        { ...req, source: body.source, options: body.options },
        caller,
        rateLimit,
        record,
        budget,
      );
    } finally {
      // The answer is still to be sent: the key's place is held until it is (a client that never reads
      // would otherwise take free replays without end).
      if (req.answered) void req.answered.then(leave, leave);
      else leave();
    }
  });
}

/** GET /account: the frame, then the caller's account record. */
export function accountRequest(
  ctx: ServiceContext,
  apiKey: string | undefined,
  requestId: string,
  clientAddress: string | undefined,
): Promise<AccountOutcome> {
  return handleRequest(
    ctx,
    { apiKey, requestId, endpoint: 'account', clientAddress },
    async (caller, rateLimit, _record, budget) => ({
      account: await budget.bound(accountRecord(ctx, caller)),
      rateLimit,
    }),
  );
}
