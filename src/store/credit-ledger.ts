// The credit ledger: grants, charges and refunds as rows per pool, each moving the account's kept balance in the
// same transaction (a balance is one row read; the ledger is the audit trail). The account is locked first.

import { checkWholeNumber } from '../api/whole-number.js';
import { RmbgError } from '../api/errors.js';
import { one, type SqlExecutor } from './sql.js';
import {
  CREDIT_POOLS,
  type Balance,
  type ChargeResult,
  type CreditPool,
  type LedgerMismatch,
  type PoolAmounts,
} from './types.js';

export const NOTHING: PoolAmounts = Object.freeze({ subscription: 0, payg: 0 });

const INSERT =
  'INSERT INTO credit_ledger (account_id, kind, pool, amount, request_id, created_at) VALUES (?, ?, ?, ?, ?, ?)';

function assertCredits(amount: number, allowZero: boolean): void {
  checkWholeNumber('credits', amount, allowZero ? 0 : 1, undefined, 'invalid_request');
}

/** The column of accounts that keeps each pool's balance. */
const COLUMN: Record<CreditPool, string> = { subscription: 'subscription_credits', payg: 'payg_credits' };

/** An unknown account has nothing: zeros, as the sum of no rows was. */
export async function balance(db: SqlExecutor, accountId: string): Promise<Balance> {
  const row = await one<{ subscription_credits: number; payg_credits: number }>(
    db,
    'SELECT subscription_credits, payg_credits FROM accounts WHERE id = ?',
    [accountId],
  );
  const subscription = row?.subscription_credits ?? 0;
  const payg = row?.payg_credits ?? 0;
  return { subscription, payg, total: subscription + payg };
}

/** A ledger row and the balance it moves, together (the caller's transaction makes them one). */
async function record(
  db: SqlExecutor,
  accountId: string,
  kind: 'grant' | 'charge' | 'refund',
  pool: CreditPool,
  amount: number,
  requestId: string | null,
  now: number,
) {
  await db.run(INSERT, [accountId, kind, pool, amount, requestId, now]);
  await db.run(`UPDATE accounts SET ${COLUMN[pool]} = ${COLUMN[pool]} + ? WHERE id = ?`, [amount, accountId]);
}

/** Accounts whose kept balance differs from the sum of their ledger rows (none, unless something bypassed the store). */
export async function ledgerMismatches(db: SqlExecutor): Promise<LedgerMismatch[]> {
  const rows = await db.all<{
    id: string;
    subscription_credits: number;
    payg_credits: number;
    ledger_subscription: number;
    ledger_payg: number;
  }>(
    `SELECT a.id, a.subscription_credits, a.payg_credits,
       CAST(COALESCE(SUM(CASE WHEN l.pool = 'subscription' THEN l.amount END), 0) AS BIGINT) AS ledger_subscription,
       CAST(COALESCE(SUM(CASE WHEN l.pool = 'payg' THEN l.amount END), 0) AS BIGINT) AS ledger_payg
     FROM accounts a LEFT JOIN credit_ledger l ON l.account_id = a.id
     GROUP BY a.id, a.subscription_credits, a.payg_credits
     HAVING a.subscription_credits <> CAST(COALESCE(SUM(CASE WHEN l.pool = 'subscription' THEN l.amount END), 0) AS BIGINT)
         OR a.payg_credits <> CAST(COALESCE(SUM(CASE WHEN l.pool = 'payg' THEN l.amount END), 0) AS BIGINT)
     ORDER BY a.id`,
  );
  const of = (subscription: number, payg: number): Balance => ({ subscription, payg, total: subscription + payg });
  return rows.map((row) => ({
    accountId: row.id,
    kept: of(row.subscription_credits, row.payg_credits),
    ledger: of(row.ledger_subscription, row.ledger_payg),
  }));
}

/** Inside a transaction that locked the account. */
export async function grant(
  db: SqlExecutor,
  accountId: string,
  amount: number,
  pool: CreditPool,
  now: number,
): Promise<void> {
  assertCredits(amount, false);
  if (!CREDIT_POOLS.includes(pool))
    throw new RmbgError('invalid_request', `pool must be one of ${CREDIT_POOLS.join(', ')}; got '${String(pool)}'`);
  await record(db, accountId, 'grant', pool, amount, null, now);
}

/** Inside a transaction that locked the account (so the balance read here is the one the rows move). */
export async function charge(
  db: SqlExecutor,
  accountId: string,
  amount: number,
  requestId: string,
  now: number,
): Promise<ChargeResult> {
  assertCredits(amount, true);
  const available = await balance(db, accountId);
  if (available.total < amount) return { ok: false, balance: available };
  // Subscription credits first: they typically expire with the billing period, pay-as-you-go
  // credits do not, so spending subscription credits first never wastes the caller's money.
  const subscription = Math.min(Math.max(available.subscription, 0), amount);
  const taken = { subscription, payg: amount - subscription };
  for (const pool of CREDIT_POOLS) {
    if (taken[pool] > 0) await record(db, accountId, 'charge', pool, -taken[pool], requestId, now);
  }
  return { ok: true, taken };
}

/** The ledger rows that give a request's charge back; inside the refund's transaction, which closed the lease. */
export async function refundCharge(db: SqlExecutor, requestId: string, now: number): Promise<PoolAmounts> {
  const rows = await db.all<{ account_id: string; kind: string; pool: CreditPool; amount: number }>(
    "SELECT account_id, kind, pool, amount FROM credit_ledger WHERE request_id = ? AND kind IN ('charge', 'refund') ORDER BY id",
    [requestId],
  );
  if (rows.some((row) => row.kind === 'refund')) return NOTHING;
  const given = { subscription: 0, payg: 0 };
  for (const row of rows) {
    await record(db, row.account_id, 'refund', row.pool, -row.amount, requestId, now);
    given[row.pool] = -row.amount;
  }
  return given;
}
