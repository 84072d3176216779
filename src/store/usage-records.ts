// Usage records: the metadata of every request (never the image), kept for usage reporting only, for
// USAGE_RETENTION_MS (deleted by the server's purge). No credit ever depends on them: settlement lives in the
// ledger and the leases.

import { camelRow, type SqlExecutor } from './sql.js';
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

/** The columns of a record, in the order recordUsage writes them. */
const COLUMNS =
  'request_id, account_id, key_id, endpoint, status, code, credits, replayed, input_bytes, size, format, width, height, duration_ms, created_at';

const toRecord = (row: Row): UsageRecord => ({ ...camelRow(row), replayed: row.replayed === 1 });

/** How long usage records are kept: 90 days (docs/deploy.md). */
export const USAGE_RETENTION_MS = 90 * 24 * 60 * 60 * 1000;

/** Deletes up to `batch` records older than the retention; resolves with how many. */
export function deleteOldUsage(db: SqlExecutor, now: number, batch: number): Promise<number> {
  return db.run(
    `DELETE FROM usage_records WHERE id IN (SELECT id FROM usage_records WHERE created_at <= ? ORDER BY created_at LIMIT ${batch})`,
    [now - USAGE_RETENTION_MS],
  );
}

export async function recordUsage(db: SqlExecutor, r: UsageRecord): Promise<void> {
  await db.run(`INSERT INTO usage_records (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
    r.requestId,
    r.accountId,
    r.keyId,
    r.endpoint,
    r.status,
    r.code,
    r.credits,
    r.replayed ? 1 : 0,
    r.inputBytes,
    r.size,
    r.format,
    r.width,
    r.height,
    Math.round(r.durationMs),
    r.createdAt,
  ]);
}

export async function listUsage(
  db: SqlExecutor,
  filter: { accountId?: string; requestId?: string } = {},
): Promise<UsageRecord[]> {
  const accountId = filter.accountId ?? null;
  const requestId = filter.requestId ?? null;
  const rows = await db.all<Row>(
    `SELECT ${COLUMNS} FROM usage_records
     WHERE (CAST(? AS TEXT) IS NULL OR account_id = ?) AND (CAST(? AS TEXT) IS NULL OR request_id = ?)
     ORDER BY id`,
    [accountId, accountId, requestId, requestId],
  );
  return rows.map(toRecord);
}
