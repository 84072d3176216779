// GET /v1.0/account, from authentication to the answer: the frame's steps (request-lifecycle.ts), then the
// caller's balance as the spec's account record.

import type { KeyOwner } from '../store/index.js';
import type { DatabaseBudget } from './answer-bound.js';
import { authenticateCaller, closeRequest, openRequest, requestFailed, takeRateLimit } from './request-lifecycle.js';
import type { ServiceContext } from './service-context.js';
import type { AccountRecord } from '../api/wire-types.js';
import type { AccountOutcome } from './types.js';

export async function getAccount(
  ctx: ServiceContext,
  apiKey: string | undefined,
  requestId: string,
  clientAddress: string | undefined,
): Promise<AccountOutcome> {
  const request = openRequest(ctx, { apiKey, requestId, endpoint: 'account', clientAddress });
  try {
    const caller = await authenticateCaller(ctx, request);
    const rateLimit = await takeRateLimit(ctx, request, caller);
    return { account: await accountRecord(ctx, caller, request.budget), rateLimit };
  } catch (error) {
    throw requestFailed(request, error);
  } finally {
    await closeRequest(ctx, request);
  }
}

async function accountRecord(ctx: ServiceContext, caller: KeyOwner, budget: DatabaseBudget): Promise<AccountRecord> {
  const { subscription, payg, total } = await budget.bound(ctx.store.balance(caller.accountId));
  return {
    data: {
      attributes: {
        // Enterprise credits and free API calls do not exist here; the spec fixes both at 0.
        credits: { total, subscription, payg, enterprise: 0 },
        api: { free_calls: 0, sizes: 'all' },
      },
    },
  };
}
