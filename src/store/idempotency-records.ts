// Idempotency records: one row per (account, Idempotency-Key). The row reserves the key for good;
// a success also keeps its response for the replay window, after which only the payload is deleted.

import type Database from 'better-sqlite3';
import { LIMITS } from '../api/options.js';
import type { IdempotencyBegin, IdempotencyRef, StoredReplay } from './types.js';

interface Row {
  fingerprint: string;
  state: 'in_progress' | 'succeeded' | 'failed';
  request_id: string;
  completed_at: number | null;
  payload: Buffer | null;
  metadata: string | null;
}

export function idempotencyRecords(db: Database.Database) {
  // INSERT OR IGNORE on the primary key is the atomic step: of several requests with the same key
  // (in this process or another one), exactly one inserts the row and gets 'new'.
  const reserve = db.prepare(
    "INSERT OR IGNORE INTO idempotency_keys (account_id, key, fingerprint, state, request_id, created_at) VALUES (?, ?, ?, 'in_progress', ?, ?)",
  );
  const read = db.prepare<[string, string], Row>(
    'SELECT fingerprint, state, request_id, completed_at, payload, metadata FROM idempotency_keys WHERE account_id = ? AND key = ?',
  );
  const succeed = db.prepare(
    "UPDATE idempotency_keys SET state = 'succeeded', completed_at = ?, payload = ?, metadata = ? WHERE account_id = ? AND key = ? AND request_id = ? AND state = 'in_progress'",
  );
  const fail = db.prepare(
    "UPDATE idempotency_keys SET state = 'failed', completed_at = ?, payload = NULL WHERE account_id = ? AND key = ? AND request_id = ? AND state = 'in_progress'",
  );
  const release = db.prepare(
    "DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND request_id = ? AND state = 'in_progress'",
  );
  const purge = db.prepare(
    "UPDATE idempotency_keys SET payload = NULL WHERE payload IS NOT NULL AND state = 'succeeded' AND completed_at <= ?",
  );
  const failAllInProgress = db.prepare("UPDATE idempotency_keys SET state = 'failed', completed_at = ? WHERE state = 'in_progress'");

  /** Must run inside a write transaction, so the insert and the read see the same row. */
  function begin(accountId: string, key: string, fingerprint: string, requestId: string, now: number): IdempotencyBegin {
    if (reserve.run(accountId, key, fingerprint, requestId, now).changes === 1) return { state: 'new' };
    const row = read.get(accountId, key) as Row;
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
      replay: { payload: row.payload, metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as unknown) },
    };
  }

  return {
    begin,
    complete(ref: IdempotencyRef, replay: StoredReplay, now: number): void {
      succeed.run(now, replay.payload, JSON.stringify(replay.metadata), ref.accountId, ref.key, ref.requestId);
    },
    fail(ref: IdempotencyRef, now: number): void {
      fail.run(now, ref.accountId, ref.key, ref.requestId);
    },
    release(ref: IdempotencyRef): void {
      release.run(ref.accountId, ref.key, ref.requestId);
    },
    purgeExpired(now: number): number {
      return purge.run(now - LIMITS.replayWindowMs).changes;
    },
    failAllInProgress(now: number): number {
      return failAllInProgress.run(now).changes;
    },
  };
}
