// Idempotency records: one row per (account, Idempotency-Key). The row reserves the key; a success also keeps
// its response for the replay window, after which the payload is deleted, and a completed key's row is deleted
// after the key retention (LIMITS), which frees the key. A row in progress is its lease's and stays.

import { LIMITS } from '../api/limits.js';
import { one, type SqlExecutor } from './sql.js';
import type { IdempotencyBegin, IdempotencyRef, StoredReplay } from './types.js';

interface Row {
  fingerprint: string;
  state: 'in_progress' | 'succeeded' | 'failed';
  request_id: string;
  completed_at: number | null;
  payload: Buffer | null;
  metadata: string | null;
}

/** Inside a transaction, so the insert and the read see the same row. */
export async function beginIdempotent(
  db: SqlExecutor,
  accountId: string,
  key: string,
  fingerprint: string,
  requestId: string,
  now: number,
): Promise<IdempotencyBegin> {
  // The insert on the primary key is the atomic step: of several requests with the same key (in this
  // process or another instance), exactly one inserts the row and gets 'new'.
  let row: Row | undefined;
  for (;;) {
    const inserted = await db.run(
      "INSERT INTO idempotency_keys (account_id, key, fingerprint, state, request_id, created_at) VALUES (?, ?, ?, 'in_progress', ?, ?) ON CONFLICT DO NOTHING",
      [accountId, key, fingerprint, requestId, now],
    );
    if (inserted === 1) return { state: 'new' };
    row = await one<Row>(
      db,
      'SELECT fingerprint, state, request_id, completed_at, payload, metadata FROM idempotency_keys WHERE account_id = ? AND key = ?',
      [accountId, key],
    );
    // Gone between the two statements (PostgreSQL reads each with a new snapshot): its request released the key,
    // or it was purged. The key is free, so try to take it again.
    if (row) break;
  }
  const requestIdOfKey = row.request_id;
  // A different request under a known key is a client bug whatever state the key is in: say so first.
  if (row.fingerprint !== fingerprint) return { state: 'mismatch', requestId: requestIdOfKey };
  if (row.state === 'in_progress') return { state: 'in_progress', requestId: requestIdOfKey };
  const completedAt = row.completed_at as number;
  if (row.state === 'failed') return { state: 'failed', requestId: requestIdOfKey, completedAt };
  if (now - completedAt >= LIMITS.replayWindowMs || row.payload === null) {
    return { state: 'expired', requestId: requestIdOfKey, completedAt };
  }
  return {
    state: 'succeeded',
    requestId: requestIdOfKey,
    completedAt,
    replay: {
      payload: Buffer.from(row.payload),
      metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as unknown),
    },
  };
}

/** Resolves with the rows changed: 0 when the key is no longer this request's to complete. */
export function succeedIdempotent(
  db: SqlExecutor,
  ref: IdempotencyRef,
  replay: StoredReplay,
  now: number,
): Promise<number> {
  return db.run(
    `UPDATE idempotency_keys SET state = 'succeeded', completed_at = ?, payload = ?, metadata = ?
       WHERE account_id = ? AND key = ? AND request_id = ? AND state = 'in_progress'`,
    [now, replay.payload, JSON.stringify(replay.metadata), ref.accountId, ref.key, ref.requestId],
  );
}

export function failIdempotent(db: SqlExecutor, ref: IdempotencyRef, now: number): Promise<number> {
  return db.run(
    `UPDATE idempotency_keys SET state = 'failed', completed_at = ?, payload = NULL
       WHERE account_id = ? AND key = ? AND request_id = ? AND state = 'in_progress'`,
    [now, ref.accountId, ref.key, ref.requestId],
  );
}

export function releaseIdempotent(db: SqlExecutor, ref: IdempotencyRef): Promise<number> {
  return db.run(
    "DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND request_id = ? AND state = 'in_progress'",
    [ref.accountId, ref.key, ref.requestId],
  );
}

export function purgeExpiredReplays(db: SqlExecutor, now: number): Promise<number> {
  return db.run(
    "UPDATE idempotency_keys SET payload = NULL WHERE payload IS NOT NULL AND state = 'succeeded' AND completed_at <= ?",
    [now - LIMITS.replayWindowMs],
  );
}

/** Rows deleted per statement: a large backlog is deleted in short statements, none near statement_timeout. */
export const PURGE_BATCH = 1000;
/**
 * Batches per table and purge run: a first run against a large backlog ends after these (the next run, a
 * minute later, goes on), so a server's shutdown waits for a bounded purge.
 */
export const PURGE_MAX_BATCHES = 50;

/** Deletes up to PURGE_BATCH completed records older than the key retention; resolves with how many. */
export function deleteExpiredKeys(db: SqlExecutor, now: number): Promise<number> {
  return db.run(
    `DELETE FROM idempotency_keys WHERE (account_id, key) IN (
       SELECT account_id, key FROM idempotency_keys WHERE completed_at <= ? AND state <> 'in_progress' ORDER BY completed_at LIMIT ${PURGE_BATCH})`,
    [now - LIMITS.idempotencyKeyRetentionMs],
  );
}
