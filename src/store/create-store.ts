// The Store over any SQL driver: each table's statements composed into the store's operations, and each
// all-or-nothing write one transaction of the driver's. The same code runs on SQLite and on PostgreSQL.

import { RmbgError } from '../api/errors.js';
import { AccountTurns } from './account-turns.js';
import { createAccount, lockAccount } from './accounts.js';
import {
  activeKeyHashes,
  createKey,
  keyChangeCount,
  keyOwner,
  keysChangedSince,
  listKeys,
  revokeKey,
} from './api-keys.js';
import { balance, charge, grant, ledgerMismatches, NOTHING, refundCharge } from './credit-ledger.js';
import {
  beginIdempotent,
  deleteExpiredKeys,
  failIdempotent,
  PURGE_BATCH,
  PURGE_MAX_BATCHES,
  purgeExpiredReplays,
  releaseIdempotent,
  succeedIdempotent,
} from './idempotency-records.js';
import {
  claimExpiredLease,
  closeLease,
  leaseOf,
  markDelivered,
  openLease,
  recordCharge,
  renewLeases,
} from './leases.js';
import { countRequest } from './rate-windows.js';
import { one, type SqlDriver, type SqlExecutor } from './sql.js';
import type {
  CreditTarget,
  ExpiryReport,
  IdempotencyRef,
  PurgeReport,
  RefundOutcome,
  Settlement,
  Store,
} from './types.js';
import { deleteOldUsage, listUsage, recordUsage } from './usage-records.js';

/** Thrown inside deliver's transaction to roll it back. */
class KeyLost extends Error {}

export function createStore(driver: SqlDriver, latestSchemaVersion: number): Store {
  return {
    engine: driver.engine,
    path: driver.location,
    latestSchemaVersion,
    ...accountOperations(driver),
    ...creditOperations(driver),
    ...requestOperations(driver),
    ...leaseOperations(driver),
    ...purgeOperations(driver),
    countRequest: (keyId, now, windowMs) => countRequest(driver, keyId, now, windowMs),
    recordUsage: (record) => recordUsage(driver, record),
    usage: (filter) => listUsage(driver, filter),
    clock: () => driver.clock(),
    schemaVersion: () => driver.schemaVersion(),
    close: () => driver.close(),
  };
}

/** A transaction of the driver's. */
function transactionOf(driver: SqlDriver): SqlDriver['transaction'] {
  return driver.transaction.bind(driver);
}

/** Accounts and their API keys. */
function accountOperations(
  driver: SqlDriver,
): Pick<
  Store,
  | 'createAccount'
  | 'createAccountWithKey'
  | 'createKey'
  | 'listKeys'
  | 'revokeKey'
  | 'accountForKey'
  | 'keyChangeCount'
  | 'keysChangedSince'
  | 'activeKeyHashes'
> {
  const tx = transactionOf(driver);
  return {
    createAccount: (plan, now = Date.now()) => createAccount(driver, plan, now),
    createAccountWithKey: ({ plan, credits = 0, pool = 'payg', now = Date.now() }) =>
      tx(async (db) => {
        const account = await createAccount(db, plan, now);
        const created = await createKey(db, account.id, now);
        if (credits > 0) await grant(db, account.id, credits, pool, now);
        return created;
      }),
    createKey: (accountId, now = Date.now()) =>
      tx(async (db) => {
        await lockAccount(db, accountId);
        return createKey(db, accountId, now);
      }),
    listKeys: () => listKeys(driver),
    revokeKey: (id, now = Date.now()) => tx((db) => revokeKey(db, id, now)),
    accountForKey: (apiKey) => keyOwner(driver, apiKey),
    keyChangeCount: () => keyChangeCount(driver),
    keysChangedSince: (since) => keysChangedSince(driver, since),
    activeKeyHashes: () => activeKeyHashes(driver),
  };
}

/** Credits granted, the balance, the ledger's audit. */
function creditOperations(driver: SqlDriver): Pick<Store, 'addCredits' | 'balance' | 'auditBalances'> {
  const tx = transactionOf(driver);
  async function accountIdOf(db: SqlExecutor, target: CreditTarget): Promise<string> {
    if ('accountId' in target) return target.accountId;
    const owner = await keyOwner(db, target.apiKey);
    if (!owner) throw new RmbgError('invalid_api_key', 'no active API key matches the given key (unknown or revoked)');
    return owner.accountId;
  }

  return {
    addCredits: (target, amount, pool, now = Date.now()) =>
      tx(async (db) => {
        const accountId = await accountIdOf(db, target);
        await lockAccount(db, accountId);
        await grant(db, accountId, amount, pool, now);
        return balance(db, accountId);
      }),
    balance: (accountId) => balance(driver, accountId),
    auditBalances: () => ledgerMismatches(driver),
  };
}

/** One request's money and key: its Idempotency-Key begun, its charge, its delivery or refund, its settlement. */
function requestOperations(
  driver: SqlDriver,
): Pick<
  Store,
  | 'beginIdempotent'
  | 'charge'
  | 'deliver'
  | 'holdDelivered'
  | 'refund'
  | 'refundUnreceived'
  | 'releaseIdempotent'
  | 'settlementOf'
> {
  const tx = transactionOf(driver);
  const chargeTurns = new AccountTurns();
  return {
    beginIdempotent: (accountId, key, fingerprint, lease, now = Date.now()) =>
      tx(async (db) => {
        const begun = await beginIdempotent(db, accountId, key, fingerprint, lease.requestId, now);
        if (begun.state === 'new') await openLease(db, lease, accountId, key, now);
        return begun;
      }),
    charge: (accountId, amount, lease, now = Date.now()) =>
      chargeTurns.run(accountId, () =>
        tx(async (db) => {
          await lockAccount(db, accountId);
          const result = await charge(db, accountId, amount, lease.requestId, now);
          if (result.ok) await recordCharge(db, lease, accountId, amount, now);
          return result;
        }),
      ),
    deliver: (requestId, idempotency, now = Date.now()) =>
      tx(async (db) => {
        if ((await closeLease(db, requestId)) === 0) return false;
        // The key is no longer this request's: undo the lease's closing, and the caller fails the request.
        if (idempotency && (await succeedIdempotent(db, idempotency.ref, idempotency.replay, now)) === 0)
          throw new KeyLost();
        return true;
      }).catch((error: unknown) => {
        if (error instanceof KeyLost) return false;
        throw error;
      }),
    holdDelivered: async (requestId, now = Date.now()) => (await markDelivered(driver, requestId, now)) === 1,
    refund: (requestId, ref, now = Date.now()): Promise<RefundOutcome> =>
      tx(async (db) => {
        // A lease held past its delivery is not this refund's: its result may be on its way to the client.
        const { settled, refunded } = await refundIn(db, requestId, ref, now, { undeliveredOnly: true });
        return { settled, refunded };
      }),
    refundUnreceived: (requestId, now = Date.now()): Promise<RefundOutcome> =>
      tx(async (db) => {
        const { settled, refunded } = await refundIn(db, requestId, undefined, now);
        return { settled, refunded };
      }),
    releaseIdempotent: (ref) =>
      tx(async (db) => {
        if ((await releaseIdempotent(db, ref)) === 1) await closeLease(db, ref.requestId);
      }),
    async settlementOf(requestId): Promise<Settlement> {
      const lease = await leaseOf(driver, requestId);
      if (lease !== 'none') return lease === 'open' ? 'leased' : 'delivered';
      // Closed: a refund row says refunded; otherwise it was delivered (a request charged nothing leaves no row
      // either way, and then there is nothing to get wrong).
      const refunded = await one(
        driver,
        "SELECT 1 AS one FROM credit_ledger WHERE request_id = ? AND kind = 'refund'",
        [requestId],
      );
      return refunded ? 'refunded' : 'delivered';
    },
  };
}

/** The leases of requests in flight: renewed by their server, expired ones refunded by any server's sweep. */
function leaseOperations(driver: SqlDriver): Pick<Store, 'renewLeases' | 'expireLeases'> {
  const tx = transactionOf(driver);
  return {
    renewLeases: (owner, requestIds, expiresAt) => renewLeases(driver, owner, requestIds, expiresAt),
    async expireLeases(now, { all = false } = {}): Promise<ExpiryReport> {
      const report = { expiredLeases: 0, refundedRequests: 0, failedIdempotencyKeys: 0 };
      /** Leases claimed whose refund failed (their account's row held past lock_timeout): the next sweep's. */
      const skipped: string[] = [];
      for (;;) {
        let claimed: string | undefined;
        // One transaction per request: a crash halfway leaves every request either settled or still leased.
        const outcome = await tx(async (db) => {
          const lease = await claimExpiredLease(db, all ? undefined : now, skipped);
          if (!lease) return undefined;
          claimed = lease.request_id;
          const ref =
            lease.idem_key === null
              ? undefined
              : { accountId: lease.account_id, key: lease.idem_key, requestId: lease.request_id };
          return refundIn(db, lease.request_id, ref, now);
        }).catch((error: unknown) => {
          // One busy account must not hold back every other refund: skip its lease and go on. A failure before
          // any lease was claimed (the database away) ends the sweep.
          if (claimed === undefined) throw error;
          skipped.push(claimed);
          return 'skipped' as const;
        });
        if (outcome === 'skipped') continue;
        // No expired lease left that nobody holds. (Settled is certain for a claimed lease; checked so a bug
        // could never loop here.)
        if (!outcome?.settled) break;
        report.expiredLeases += 1;
        if (outcome.refunded.subscription + outcome.refunded.payg > 0) report.refundedRequests += 1;
        if (outcome.keyFailed) report.failedIdempotencyKeys += 1;
      }
      return report;
    },
  };
}

/** What is past its keeping: replays, idempotency keys, old usage records, in bounded batches. */
function purgeOperations(driver: SqlDriver): Pick<Store, 'purgeExpired'> {
  return {
    async purgeExpired(now = Date.now()): Promise<PurgeReport> {
      const report = { replays: await purgeExpiredReplays(driver, now), keys: 0, usageRecords: 0 };
      // In batches, each its own statement: a backlog never holds rows (or a SQLite writer) for long; at most
      // PURGE_MAX_BATCHES a table per run, the rest left to the next run.
      for (
        let batch = 0, deleted = PURGE_BATCH;
        deleted === PURGE_BATCH && batch < PURGE_MAX_BATCHES;
        batch += 1, report.keys += deleted
      ) {
        deleted = await deleteExpiredKeys(driver, now);
      }
      for (
        let batch = 0, deleted = PURGE_BATCH;
        deleted === PURGE_BATCH && batch < PURGE_MAX_BATCHES;
        batch += 1, report.usageRecords += deleted
      ) {
        deleted = await deleteOldUsage(driver, now, PURGE_BATCH);
      }
      return report;
    },
  };
}

/** The refund of a failed request: whoever closes the lease gives the charge back and fails the key; once. */
async function refundIn(
  db: SqlExecutor,
  requestId: string,
  ref: IdempotencyRef | undefined,
  now: number,
  { undeliveredOnly = false } = {},
) {
  if ((await closeLease(db, requestId, { undeliveredOnly })) === 0)
    return { settled: false, refunded: NOTHING, keyFailed: false };
  const refunded = await refundCharge(db, requestId, now);
  const keyFailed = ref ? (await failIdempotent(db, ref, now)) === 1 : false;
  return { settled: true, refunded, keyFailed };
}
