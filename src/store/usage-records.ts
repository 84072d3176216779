// Usage records: the metadata of every request (never the image), kept for usage reporting.

import type Database from 'better-sqlite3';
import type { UsageEndpoint, UsageRecord } from './types.js';

interface Row {
  request_id: string;
  account_id: string | null;
  key_id: string | null;
  endpoint: UsageEndpoint;
  status: number;
  code: string | null;
  credits: number;
  replayed: number;
  input_bytes: number | null;
  size: string | null;
  format: string | null;
  width: number | null;
  height: number | null;
  duration_ms: number;
  created_at: number;
}

function toRecord(row: Row): UsageRecord {
  return {
    requestId: row.request_id,
    accountId: row.account_id,
    keyId: row.key_id,
    endpoint: row.endpoint,
    status: row.status,
    code: row.code,
    credits: row.credits,
    replayed: row.replayed === 1,
    inputBytes: row.input_bytes,
    size: row.size,
    format: row.format,
    width: row.width,
    height: row.height,
    durationMs: row.duration_ms,
    createdAt: row.created_at,
  };
}

export function usageRecords(db: Database.Database) {
  const insert = db.prepare(
    `INSERT INTO usage_records (request_id, account_id, key_id, endpoint, status, code, credits, replayed, input_bytes, size, format, width, height, duration_ms, created_at)
     VALUES (@requestId, @accountId, @keyId, @endpoint, @status, @code, @credits, @replayed, @inputBytes, @size, @format, @width, @height, @durationMs, @createdAt)`,
  );
  const select = db.prepare<{ accountId: string | null; requestId: string | null }, Row>(
    `SELECT * FROM usage_records
     WHERE (@accountId IS NULL OR account_id = @accountId) AND (@requestId IS NULL OR request_id = @requestId)
     ORDER BY id`,
  );
  // Charges whose request never wrote its usage record (written last, success or failure) were cut off by a crash.
  const unfinishedCharges = db.prepare<[], { request_id: string }>(
    `SELECT DISTINCT l.request_id FROM credit_ledger l
     WHERE l.kind = 'charge'
       AND NOT EXISTS (SELECT 1 FROM usage_records u WHERE u.request_id = l.request_id)
       AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.request_id = l.request_id AND r.kind = 'refund')`,
  );

  return {
    record(record: UsageRecord): void {
      insert.run({ ...record, durationMs: Math.round(record.durationMs), replayed: record.replayed ? 1 : 0 });
    },
    list(filter: { accountId?: string; requestId?: string } = {}): UsageRecord[] {
      return select.all({ accountId: filter.accountId ?? null, requestId: filter.requestId ?? null }).map(toRecord);
    },
    unfinishedChargeRequestIds(): string[] {
      return unfinishedCharges.all().map((row) => row.request_id);
    },
  };
}
