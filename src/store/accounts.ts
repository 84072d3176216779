// The accounts table: who owns keys and credits, and on which plan.

import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import { RmbgError } from '../api/errors.js';
import { PLANS, type Account, type Plan } from './types.js';

export function accountsTable(db: Database.Database) {
  const insert = db.prepare('INSERT INTO accounts (id, plan, created_at) VALUES (?, ?, ?)');
  const exists = db.prepare<[string], { id: string }>('SELECT id FROM accounts WHERE id = ?');

  return {
    create(plan: Plan, now: number): Account {
      if (!PLANS.includes(plan)) {
        throw new RmbgError('invalid_request', `plan must be one of ${PLANS.join(', ')}; got '${String(plan)}'`);
      }
      const account = { id: 'acct_' + randomBytes(8).toString('hex'), plan, createdAt: now };
      insert.run(account.id, account.plan, account.createdAt);
      return account;
    },
    assertExists(id: string): void {
      if (!exists.get(id)) throw new RmbgError('invalid_request', `no account with id '${id}'`);
    },
  };
}
