// The getAccount use case: the caller's balance as the spec's account record.

import type { KeyOwner } from '../store/index.js';
import type { ServiceContext } from './service-context.js';
import type { AccountRecord } from '../api/wire-types.js';

export async function accountRecord(ctx: ServiceContext, caller: KeyOwner): Promise<AccountRecord> {
  const { subscription, payg, total } = await ctx.store.balance(caller.accountId);
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
