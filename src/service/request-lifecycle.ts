// The frame every API request shares, as named steps a use case calls in order (remove-background.ts,
// get-account.ts): open it (its usage record and database budget), authenticate the caller (an address that keeps
// failing gets 429 unless its key is valid), take the key's rate limit, and at the end give an error the rate-limit
// window and write the usage record whatever happened (a failed authentication is counted instead). Every wait on
// the store is counted against the request's database budget (answer-bound.ts), the usage record's included.

import { policyOf, RmbgError, toRmbgError, messageOf } from '../api/errors.js';
import type { KeyOwner, UsageEndpoint, UsageRecord } from '../store/index.js';
import type { RateLimitInfo } from '../api/wire-types.js';
import type { ServiceContext } from './service-context.js';
import { DatabaseBudget } from './answer-bound.js';

export interface RequestFrame {
  apiKey: string | undefined;
  requestId: string;
  endpoint: UsageEndpoint;
  /** The client's address, for throttling failed authentications (undefined: not throttled). */
  clientAddress?: string | undefined;
}

/** One request in its frame: what the steps below fill in as it goes. */
export interface OpenRequest {
  frame: RequestFrame;
  startedAt: number;
  budget: DatabaseBudget;
  /** Written at the end (closeRequest) when a key was known. */
  usage: UsageRecord;
  /** Known once the key's rate limit was taken; every later error carries it. */
  rateLimit?: RateLimitInfo;
  /** No key known (missing, invalid, or an address refused for failing): nobody to bill or report to, so no
   * usage row; the throttle counts these instead. */
  anonymous: boolean;
}

/** The request's start: its usage record (a 200 until an error says otherwise) and its database budget. */
export function openRequest(ctx: ServiceContext, frame: RequestFrame): OpenRequest {
  const startedAt = ctx.now();
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
  };
  return { frame, startedAt, budget: new DatabaseBudget(), usage, anonymous: true };
}

/** The caller of the frame's API key, through the per-address throttle of failed keys. */
export async function authenticateCaller(ctx: ServiceContext, request: OpenRequest): Promise<KeyOwner> {
  const { frame, startedAt } = request;
  // An address over its failures still has every valid key looked up (the set of valid keys says which, with
  // no lookup, brought up to date first so that a key created a moment ago is known): the throttle must not lock
  // out the customers behind one address (a proxy, a NAT). Any other key gets 429 without a lookup, so a flood of
  // bad keys costs the store no lookup; each one still counts as a failure, keeping the address's window in use.
  const refusal = ctx.authThrottle.refusal(frame.clientAddress, startedAt);
  if (refusal && !(await ctx.keyLookups.known(frame.apiKey, request.budget))) {
    ctx.authThrottle.fail(frame.clientAddress, startedAt);
    throw refusal;
  }
  let caller: KeyOwner;
  try {
    caller = await ctx.keyLookups.authenticate(frame.apiKey, request.budget);
  } catch (error) {
    if (!isAuthFailure(error)) request.anonymous = false;
    else ctx.authThrottle.fail(frame.clientAddress, startedAt);
    throw isAuthFailure(error) && refusal ? refusal : error;
  }
  request.anonymous = false;
  request.usage.accountId = caller.accountId;
  request.usage.keyId = caller.keyId;
  return caller;
}

/** Counts the request against its key's rate limit (429 past it); the window goes on every later answer. */
export async function takeRateLimit(
  ctx: ServiceContext,
  request: OpenRequest,
  caller: KeyOwner,
): Promise<RateLimitInfo> {
  request.rateLimit = await request.budget.bound(ctx.limiter.take(caller.keyId, request.startedAt));
  return request.rateLimit;
}

/** The error the request ends with, recorded in its usage; authentication errors come before any key is known, so
 * only they go without the rate-limit window. */
export function requestFailed(request: OpenRequest, error: unknown): RmbgError {
  const thrown = toRmbgError(error);
  const failure = request.rateLimit ? thrown.with({ rateLimit: request.rateLimit }) : thrown;
  request.usage.status = failure.status;
  request.usage.code = failure.code;
  return failure;
}

/** The request's end: its usage record written when a key was known, awaited while the budget lasts, then left to
 * finish in the background (the answer does not wait for it). */
export async function closeRequest(ctx: ServiceContext, request: OpenRequest): Promise<void> {
  if (!request.anonymous) await request.budget.bound(writeUsage(ctx, request.usage, request.startedAt)).catch(() => {});
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
    process.emitWarning(`usage record of request ${usage.requestId} not written: ${messageOf(error)}`);
  }
}
