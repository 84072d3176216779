// Leases: the register of requests that hold something to settle (a reserved Idempotency-Key, a charge).
// A lease row exists from the reservation or charge until the settlement, and the settlement deletes it in
// its own transaction: whoever deletes the row settles the request, so each charge is settled exactly once.

import type { SqlExecutor } from './sql.js';
import type { Lease } from './types.js';

export interface LeaseRow {
  request_id: string;
  account_id: string;
  idem_key: string | null;
  charged: number;
}

export function openLease(
  db: SqlExecutor,
  lease: Lease,
  accountId: string,
  idemKey: string | null,
  now: number,
): Promise<number> {
  return db.run(
    'INSERT INTO leases (request_id, account_id, idem_key, owner, expires_at, charged, created_at) VALUES (?, ?, ?, ?, ?, 0, ?)',
    [lease.requestId, accountId, idemKey, lease.owner, lease.expiresAt, now],
  );
}

/** Records the charge on the request's lease, opening one for a request without an Idempotency-Key. */
export function recordCharge(
  db: SqlExecutor,
  lease: Lease,
  accountId: string,
  amount: number,
  now: number,
): Promise<number> {
  return db.run(
    `INSERT INTO leases (request_id, account_id, idem_key, owner, expires_at, charged, created_at) VALUES (?, ?, NULL, ?, ?, ?, ?)
     ON CONFLICT (request_id) DO UPDATE SET charged = excluded.charged, expires_at = excluded.expires_at`,
    [lease.requestId, accountId, lease.owner, lease.expiresAt, amount, now],
  );
}

/**
 * The settlement's first step: 1 when this caller took the lease away (and so settles), 0 when someone else did.
 * `undeliveredOnly`: not a lease held past its delivery (markDelivered), whose result may be on its way.
 */
export function closeLease(db: SqlExecutor, requestId: string, { undeliveredOnly = false } = {}): Promise<number> {
  const delivered = undeliveredOnly ? ' AND delivered_at IS NULL' : '';
  return db.run(`DELETE FROM leases WHERE request_id = ?${delivered}`, [requestId]);
}

/** Marks the request's result delivered while its lease is kept until the answer is sent: 0 when it has no lease. */
export function markDelivered(db: SqlExecutor, requestId: string, now: number): Promise<number> {
  return db.run('UPDATE leases SET delivered_at = ? WHERE request_id = ? AND delivered_at IS NULL', [now, requestId]);
}

/** Only the requests still running: a lease its request could not settle (the database was away) must expire. */
export function renewLeases(
  db: SqlExecutor,
  owner: string,
  requestIds: readonly string[],
  expiresAt: number,
): Promise<number> {
  if (requestIds.length === 0) return Promise.resolve(0);
  return db.run(
    `UPDATE leases SET expires_at = ? WHERE owner = ? AND request_id IN (${requestIds.map(() => '?').join(', ')})`,
    [expiresAt, owner, ...requestIds],
  );
}

/**
 * The next expired lease (by `expiredBy`; any when undefined), locked for the settling transaction; one another
 * transaction holds is passed over, so a sweep never queues behind a stopped server.
 */
export async function claimExpiredLease(
  db: SqlExecutor,
  expiredBy: number | undefined,
  passOver: readonly string[] = [],
): Promise<LeaseRow | undefined> {
  const others = passOver.length === 0 ? '' : ` AND request_id NOT IN (${passOver.map(() => '?').join(', ')})`;
  const rows = await db.all<LeaseRow>(
    `SELECT request_id, account_id, idem_key, charged FROM leases WHERE (CAST(? AS BIGINT) IS NULL OR expires_at <= ?)${others}
     ORDER BY expires_at, request_id LIMIT 1${db.skipLocked}`,
    [expiredBy ?? null, expiredBy ?? null, ...passOver],
  );
  return rows[0];
}

/** The request's lease: none (settled), open, or held past its delivery (markDelivered). */
export async function leaseOf(db: SqlExecutor, requestId: string): Promise<'none' | 'open' | 'delivered'> {
  const [row] = await db.all<{ delivered_at: number | null }>('SELECT delivered_at FROM leases WHERE request_id = ?', [
    requestId,
  ]);
  if (!row) return 'none';
  return row.delivered_at === null ? 'open' : 'delivered';
}
