// Opens the store of a data directory: the SQLite file in WAL mode, migrated, with each table's
// statements composed into one Store. Every write that must be all-or-nothing is one transaction.

import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { RmbgError } from '../api/errors.js';
import { accountsTable } from './accounts.js';
import { apiKeysTable } from './api-keys.js';
import { creditLedger } from './credit-ledger.js';
import { idempotencyRecords } from './idempotency-records.js';
import { migrate } from './migrations.js';
import { makeCompanionsPrivate, preparePrivateDataDir } from './private-files.js';
import type { CreditTarget, IdempotencyRef, PoolAmounts, Store } from './types.js';
import { usageRecords } from './usage-records.js';

export const STORE_FILE = 'rmbg.sqlite';

/** How long a write waits for another process's write (e.g. `rmbg keys create` while `rmbg serve` runs). */
const BUSY_TIMEOUT_MS = 5000;

export function openStore(dataDir: string): Store {
  const dir = resolve(dataDir);
  const path = join(dir, STORE_FILE);
  // 0700 / 0600 whatever existed before: the directory holds key hashes, balances and replayable results of other users' images.
  preparePrivateDataDir(dir, path);
  let db: Database.Database;
  try {
    db = new Database(path);
  } catch (error) {
    throw new RmbgError('io_error', `cannot open ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('journal_mode = WAL');
    // FULL (the default) rather than NORMAL: a granted or refunded credit must survive a power cut.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    migrate(db);
    makeCompanionsPrivate(path);
  } catch (error) {
    db.close();
    throw error;
  }

  const accounts = accountsTable(db);
  const keys = apiKeysTable(db);
  const ledger = creditLedger(db);
  const idempotency = idempotencyRecords(db);
  const usage = usageRecords(db);

  // better-sqlite3 transactions are synchronous, so a transaction can never span an await; IMMEDIATE
  // takes the write lock at BEGIN, so balance reads and the rows written after them cannot interleave.
  const immediate = <A extends unknown[], R>(fn: (...args: A) => R) => {
    const tx = db.transaction(fn);
    return (...args: A): R => tx.immediate(...args);
  };

  function accountIdOf(target: CreditTarget): string {
    if ('accountId' in target) {
      accounts.assertExists(target.accountId);
      return target.accountId;
    }
    const owner = keys.owner(target.apiKey);
    if (!owner) throw new RmbgError('invalid_api_key', 'no active API key matches the given key (unknown or revoked)');
    return owner.accountId;
  }

  const failRequest = immediate((requestId: string, ref: IdempotencyRef | undefined, now: number): PoolAmounts => {
    const given = ledger.refund(requestId, now);
    if (ref) idempotency.fail(ref, now);
    return given;
  });

  return {
    path,
    createAccount: (plan, now = Date.now()) => accounts.create(plan, now),
    createAccountWithKey: immediate(({ plan, credits = 0, pool = 'payg', now = Date.now() }) => {
      const account = accounts.create(plan, now);
      const created = keys.create(account.id, now);
      if (credits > 0) ledger.grant(account.id, credits, pool, now);
      return created;
    }),
    createKey: immediate((accountId: string, now: number = Date.now()) => {
      accounts.assertExists(accountId);
      return keys.create(accountId, now);
    }),
    listKeys: () => keys.list(),
    revokeKey: (id, now = Date.now()) => keys.revoke(id, now),
    accountForKey: (apiKey) => keys.owner(apiKey),

    addCredits: immediate((target: CreditTarget, amount: number, pool, now: number = Date.now()) => {
      const accountId = accountIdOf(target);
      ledger.grant(accountId, amount, pool, now);
      return ledger.balance(accountId);
    }),
    balance: (accountId) => ledger.balance(accountId),
    charge: immediate((accountId: string, amount: number, requestId: string, now: number = Date.now()) => ledger.charge(accountId, amount, requestId, now)),
    refund: immediate((requestId: string, now: number = Date.now()) => ledger.refund(requestId, now)),

    beginIdempotent: immediate((accountId: string, key: string, fingerprint: string, requestId: string, now: number = Date.now()) =>
      idempotency.begin(accountId, key, fingerprint, requestId, now),
    ),
    completeIdempotent: (ref, replay, now = Date.now()) => idempotency.complete(ref, replay, now),
    failIdempotent: (ref, now = Date.now()) => idempotency.fail(ref, now),
    failRequest: (requestId, ref, now = Date.now()) => failRequest(requestId, ref, now),
    releaseIdempotent: (ref) => idempotency.release(ref),
    purgeExpiredReplays: (now = Date.now()) => idempotency.purgeExpired(now),

    recordUsage: (record) => usage.record(record),
    usage: (filter) => usage.list(filter),

    recoverInterrupted: immediate((now: number = Date.now()) => {
      const unfinished = usage.unfinishedChargeRequestIds();
      for (const requestId of unfinished) ledger.refund(requestId, now);
      return { refundedRequests: unfinished.length, failedIdempotencyKeys: idempotency.failAllInProgress(now) };
    }),

    close: () => {
      if (db.open) db.close();
    },
  };
}
