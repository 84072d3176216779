// The credit ledger: grants, charges and refunds as rows, per pool. Balances are sums of rows, and
// every movement happens inside one write transaction, so no two requests can spend the same credit.

import type Database from 'better-sqlite3';
import { RmbgError } from '../api/errors.js';
import { CREDIT_POOLS, type Balance, type ChargeResult, type CreditPool, type PoolAmounts } from './types.js';

const NOTHING: PoolAmounts = Object.freeze({ subscription: 0, payg: 0 });

function assertCredits(amount: number, allowZero: boolean): void {
  if (!Number.isSafeInteger(amount) || amount < (allowZero ? 0 : 1)) {
    throw new RmbgError('invalid_request', `credits must be a whole number of at least ${allowZero ? 0 : 1}; got ${amount}`);
  }
}

export function creditLedger(db: Database.Database) {
  const sums = db.prepare<[string], { pool: CreditPool; sum: number }>(
    'SELECT pool, SUM(amount) AS sum FROM credit_ledger WHERE account_id = ? GROUP BY pool',
  );
  const insert = db.prepare(
    'INSERT INTO credit_ledger (account_id, kind, pool, amount, request_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const rowsOf = db.prepare<[string], { account_id: string; kind: string; pool: CreditPool; amount: number }>(
    "SELECT account_id, kind, pool, amount FROM credit_ledger WHERE request_id = ? AND kind IN ('charge', 'refund') ORDER BY id",
  );

  function balance(accountId: string): Balance {
    const result = { subscription: 0, payg: 0, total: 0 };
    for (const row of sums.all(accountId)) result[row.pool] = row.sum;
    result.total = result.subscription + result.payg;
    return result;
  }

  function grant(accountId: string, amount: number, pool: CreditPool, now: number): void {
    assertCredits(amount, false);
    if (!CREDIT_POOLS.includes(pool)) throw new RmbgError('invalid_request', `pool must be one of ${CREDIT_POOLS.join(', ')}; got '${String(pool)}'`);
    insert.run(accountId, 'grant', pool, amount, null, now);
  }

  /** Must run inside a write transaction (the caller's BEGIN IMMEDIATE). */
  function charge(accountId: string, amount: number, requestId: string, now: number): ChargeResult {
    assertCredits(amount, true);
    const available = balance(accountId);
    if (available.total < amount) return { ok: false, balance: available };
    // Subscription credits first: they typically expire with the billing period, pay-as-you-go
    // credits do not, so spending subscription credits first never wastes the caller's money.
    const subscription = Math.min(Math.max(available.subscription, 0), amount);
    const taken = { subscription, payg: amount - subscription };
    for (const pool of CREDIT_POOLS) {
      if (taken[pool] > 0) insert.run(accountId, 'charge', pool, -taken[pool], requestId, now);
    }
    return { ok: true, taken };
  }

  /** Must run inside a write transaction. */
  function refund(requestId: string, now: number): PoolAmounts {
    const rows = rowsOf.all(requestId);
    if (rows.some((row) => row.kind === 'refund')) return NOTHING;
    const given = { subscription: 0, payg: 0 };
    for (const row of rows) {
      insert.run(row.account_id, 'refund', row.pool, -row.amount, requestId, now);
      given[row.pool] = -row.amount;
    }
    return given;
  }

  return { balance, grant, charge, refund };
}
