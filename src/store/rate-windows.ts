// The shared rate-limit windows: one row per API key, counted by one atomic upsert, so every instance on
// the database counts into the same window. What the numbers mean (limit, remaining, reset) is decided by
// src/service/rate-limiter.ts. One row per API key that ever called, so the table is as large as api_keys at most.

import type { SqlExecutor } from './sql.js';
import type { RateWindow } from './types.js';

/** Counts one request of the key in its current window, starting a new window when the last one is over. */
export async function countRequest(db: SqlExecutor, keyId: string, now: number, windowMs: number): Promise<RateWindow> {
  const rows = await db.all<{ window_start: number; count: number }>(
    `INSERT INTO rate_windows (key_id, window_start, count) VALUES (?, ?, 1)
     ON CONFLICT (key_id) DO UPDATE SET
       window_start = CASE WHEN excluded.window_start - rate_windows.window_start >= ? THEN excluded.window_start ELSE rate_windows.window_start END,
       count = CASE WHEN excluded.window_start - rate_windows.window_start >= ? THEN 1 ELSE rate_windows.count + 1 END
     RETURNING window_start, count`,
    [keyId, now, windowMs, windowMs],
  );
  const row = rows[0] as { window_start: number; count: number };
  return { start: row.window_start, count: row.count };
}
