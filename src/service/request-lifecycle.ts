// The frame of every API request: authenticate (an address that keeps failing gets 429 unless its key is valid),
// count it against the key's rate limit, run the use case, attach the rate-limit window to any error, and
// write the request's usage record whatever happens (a failed authentication is counted instead). Every wait on
// the store is counted against the request's database budget (answer-bound.ts), the usage record's included.

import { policyOf, RmbgError, toRmbgError } from '../api/errors.js';
import type { KeyOwner, UsageEndpoint, UsageRecord } from '../store/index.js';
import type { RateLimitInfo } from '../api/wire-types.js';
import type { ServiceContext } from './service-context.js';
import { KEY_SET_KNOWN_WITHIN_S } from './valid-keys.js';
import { DatabaseBudget } from './answer-bound.js';

export interface RequestFrame {
  apiKey: string | undefined;
  requestId: string;
  endpoint: UsageEndpoint;
  /** The client's address, for throttling failed authentications (undefined: not throttled). */
  clientAddress?: string | undefined;
  /** Usage fields known before the request runs (requested size, input bytes). */
  usage?: Partial<UsageRecord>;
}

export async function handleRequest<T>(
  ctx: ServiceContext,
  frame: RequestFrame,
  run: (caller: KeyOwner, rateLimit: RateLimitInfo, usage: UsageRecord, budget: DatabaseBudget) => Promise<T>,
): Promise<T> {
  const startedAt = ctx.now();
  const budget = new DatabaseBudget();
  const usage: UsageRecord = {
    requestId: frame.requestId,
    accountId: null,
    keyId: null,
    endpoint: frame.endpoint,
    status: 200,
    code: null,
    credits: 0,
    replayed: false,
    inputBytes: null,
    size: null,
    format: null,
    width: null,
    height: null,
    durationMs: 0,
    createdAt: startedAt,
    ...frame.usage,
  };
  let rateLimit: RateLimitInfo | undefined;
  // No key known (missing, invalid, or an address refused for failing): nobody to bill or report to, so no
  // usage row; the throttle counts these instead.
  let anonymous = true;
  try {
    // An address over its failures still has every valid key looked up (the set of valid keys says which, with
    // no lookup): the throttle must not lock out the customers behind one address (a proxy, a NAT). Any other key
    // gets 429 without a lookup, so a flood of bad keys costs the store nothing.
    // A key sent but not known may be one created elsewhere since the last reload of the valid keys: its 429 says
    // to retry once the set knows it, not at the end of the throttle's minute.
    const keySent = frame.apiKey !== undefined && frame.apiKey.trim() !== '';
    const refusal = ctx.authThrottle.refusal(
      frame.clientAddress,
      startedAt,
      keySent ? KEY_SET_KNOWN_WITHIN_S : Number.POSITIVE_INFINITY,
    );
    if (refusal && !ctx.keyLookups.known(frame.apiKey)) throw refusal;
    let caller: KeyOwner;
    try {
      caller = await ctx.keyLookups.authenticate(frame.apiKey, budget);
    } catch (error) {
      if (!isAuthFailure(error)) anonymous = false;
      else if (refusal) throw refusal;
      else ctx.authThrottle.fail(frame.clientAddress, startedAt);
      throw error;
    }
    anonymous = false;
    usage.accountId = caller.accountId;
    usage.keyId = caller.keyId;
    rateLimit = await budget.bound(ctx.limiter.take(caller.keyId, startedAt));
    return await run(caller, rateLimit, usage, budget);
  } catch (error) {
    // Authentication errors come before any key is known, so only they go without the rate-limit window.
    const thrown = toRmbgError(error);
    const failure = rateLimit ? thrown.with({ rateLimit }) : thrown;
    usage.status = failure.status;
    usage.code = failure.code;
    throw failure;
  } finally {
    // Awaited while the budget lasts, then left to finish in the background: the answer does not wait for it.
    if (!anonymous) await budget.bound(writeUsage(ctx, usage, startedAt)).catch(() => {});
  }
}

function isAuthFailure(error: unknown): boolean {
  return error instanceof RmbgError && policyOf(error.code).authFailure;
}

async function writeUsage(ctx: ServiceContext, usage: UsageRecord, startedAt: number): Promise<void> {
  usage.durationMs = Math.max(0, ctx.now() - startedAt);
  try {
    await ctx.store.recordUsage(usage);
  } catch (error) {
    // Usage is reporting, not billing (the ledger and the leases are): a lost record moves no credit, and a
    // failed write must not turn an answered request into an error. Written after the answer (the budget spent),
    // its failure is reported the same way.
    process.emitWarning(`usage record of request ${usage.requestId} not written: ${(error as Error).message}`);
  }
}
