// The accounts table: who owns keys and credits, and on which plan.

import { randomBytes } from 'node:crypto';
import { RmbgError } from '../api/errors.js';
import { one, type SqlExecutor } from './sql.js';
import { PLANS, type Account, type Plan } from './types.js';

export async function createAccount(db: SqlExecutor, plan: Plan, now: number): Promise<Account> {
  if (!PLANS.includes(plan)) {
    throw new RmbgError('invalid_request', `plan must be one of ${PLANS.join(', ')}; got '${String(plan)}'`);
  }
  const account = { id: `acct_${randomBytes(8).toString('hex')}`, plan, createdAt: now };
  await db.run('INSERT INTO accounts (id, plan, created_at) VALUES (?, ?, ?)', [
    account.id,
    account.plan,
    account.createdAt,
  ]);
  return account;
}

/**
 * Throws invalid_request for an unknown account. Inside a transaction the row stays locked until it ends
 * (PostgreSQL), which is what serialises the balance checks and ledger rows of one account across instances.
 */
export async function lockAccount(db: SqlExecutor, id: string): Promise<void> {
  if (!(await one(db, `SELECT id FROM accounts WHERE id = ?${db.forUpdate}`, [id]))) {
    throw new RmbgError('invalid_request', `no account with id '${id}'`);
  }
}
