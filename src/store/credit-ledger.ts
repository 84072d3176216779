// The credit ledger: grants, charges and refunds as rows, per pool. Balances are sums of rows; a charge or
// grant first locks its account (lockAccount), so no two requests, on any instance, spend the same credit.

import { RmbgError } from '../api/errors.js';
import type { SqlExecutor } from './sql.js';
import { CREDIT_POOLS, type Balance, type ChargeResult, type CreditPool, type PoolAmounts } from './types.js';

export const NOTHING: PoolAmounts = Object.freeze({ subscription: 0, payg: 0 });

const INSERT = 'INSERT INTO credit_ledger (account_id, kind, pool, amount, request_id, created_at) VALUES (?, ?, ?, ?, ?, ?)';

function assertCredits(amount: number, allowZero: boolean): void {
  if (!Number.isSafeInteger(amount) || amount < (allowZero ? 0 : 1)) {
    throw new RmbgError('invalid_request', `credits must be a whole number of at least ${allowZero ? 0 : 1}; got ${amount}`);
  }
}

export async function balance(db: SqlExecutor, accountId: string): Promise<Balance> {
  const result = { subscription: 0, payg: 0, total: 0 };
  const rows = await db.all<{ pool: CreditPool; sum: number }>(
    'SELECT pool, CAST(SUM(amount) AS BIGINT) AS sum FROM credit_ledger WHERE account_id = ? GROUP BY pool',
    [accountId],
  );
  for (const row of rows) result[row.pool] = row.sum;
  result.total = result.subscription + result.payg;
  return result;
}

/** Inside a transaction that locked the account. */
export async function grant(db: SqlExecutor, accountId: string, amount: number, pool: CreditPool, now: number): Promise<void> {
  assertCredits(amount, false);
  if (!CREDIT_POOLS.includes(pool)) throw new RmbgError('invalid_request', `pool must be one of ${CREDIT_POOLS.join(', ')}; got '${String(pool)}'`);
  await db.run(INSERT, [accountId, 'grant', pool, amount, null, now]);
}

/** Inside a transaction that locked the account. */
export async function charge(db: SqlExecutor, accountId: string, amount: number, requestId: string, now: number): Promise<ChargeResult> {
  assertCredits(amount, true);
  const available = await balance(db, accountId);
  if (available.total < amount) return { ok: false, balance: available };
  // Subscription credits first: they typically expire with the billing period, pay-as-you-go
  // credits do not, so spending subscription credits first never wastes the caller's money.
  const subscription = Math.min(Math.max(available.subscription, 0), amount);
  const taken = { subscription, payg: amount - subscription };
  for (const pool of CREDIT_POOLS) {
    if (taken[pool] > 0) await db.run(INSERT, [accountId, 'charge', pool, -taken[pool], requestId, now]);
  }
  return { ok: true, taken };
}

/** Inside the transaction that settles the request (it deleted the request's lease, so it runs once). */
export async function refund(db: SqlExecutor, requestId: string, now: number): Promise<PoolAmounts> {
  const rows = await db.all<{ account_id: string; kind: string; pool: CreditPool; amount: number }>(
    "SELECT account_id, kind, pool, amount FROM credit_ledger WHERE request_id = ? AND kind IN ('charge', 'refund') ORDER BY id",
    [requestId],
  );
  if (rows.some((row) => row.kind === 'refund')) return NOTHING;
  const given = { subscription: 0, payg: 0 };
  for (const row of rows) {
    await db.run(INSERT, [row.account_id, 'refund', row.pool, -row.amount, requestId, now]);
    given[row.pool] = -row.amount;
  }
  return given;
}
