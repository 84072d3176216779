// Who is calling: the X-API-Key checked against the store, and whether the account's plan includes API access.

import { RmbgError } from '../api/errors.js';
import type { KeyOwner, Plan, Store } from '../store/index.js';

/** Plans that include API access (api-spec: Pro and Enterprise; no free API allowance). */
const API_PLANS: ReadonlySet<Plan> = new Set<Plan>(['pro', 'enterprise']);

export async function authenticate(store: Pick<Store, 'accountForKey'>, apiKey: string | undefined): Promise<KeyOwner> {
  if (apiKey === undefined || apiKey.trim() === '') {
    throw new RmbgError(
      'missing_api_key',
      "the X-API-Key header is missing or empty; send the account's API key in it",
    );
  }
  const owner = await store.accountForKey(apiKey.trim());
  if (!owner) {
    throw new RmbgError(
      'invalid_api_key',
      'the X-API-Key is not a valid key of this service (unknown or revoked); keys of other services are not accepted',
    );
  }
  if (!API_PLANS.has(owner.plan)) {
    throw new RmbgError(
      'plan_without_api_access',
      `the account's plan '${owner.plan}' has no API access; API access needs the ${[...API_PLANS].join(' or ')} plan`,
    );
  }
  return owner;
}
