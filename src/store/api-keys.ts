// API keys: generation, hashing, and the api_keys table. Only the sha256 of a key is stored; the
// key itself exists in the answer to its creation and in the caller's configuration, nowhere else.

import { createHash, randomBytes } from 'node:crypto';
import { camelRow, one, type SqlExecutor } from './sql.js';
import type { CreatedKey, KeyChange, KeyInfo, KeyOwner, Plan } from './types.js';

const KEY_PREFIX = 'rmbg_';
/** Characters kept for display: "rmbg_" and 6 of the 43 random ones (36 bits of 256 shown). */
const DISPLAY_LENGTH = KEY_PREFIX.length + 6;

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

function newKeyId(): string {
  return `key_${randomBytes(8).toString('hex')}`;
}

interface KeyRow {
  id: string;
  account_id: string;
  plan: Plan;
  key_prefix: string;
  created_at: number;
  revoked_at: number | null;
}

const toKeyInfo = (row: KeyRow): KeyInfo => camelRow(row);

const SELECT =
  'SELECT k.id, k.account_id, a.plan, k.key_prefix, k.created_at, k.revoked_at FROM api_keys k JOIN accounts a ON a.id = k.account_id';

async function keyById(db: SqlExecutor, id: string): Promise<KeyInfo | undefined> {
  const row = await one<KeyRow>(db, `${SELECT} WHERE k.id = ?`, [id]);
  return row && toKeyInfo(row);
}

/**
 * Counts one key change and returns its number; inside the transaction that makes the change. On PostgreSQL the
 * counter's row stays locked until that transaction ends, so changes commit in the order of their numbers: a
 * server that reads the count N sees every change numbered up to N.
 */
async function nextKeyChange(db: SqlExecutor): Promise<number> {
  const row = await one<{ latest: number }>(
    db,
    'UPDATE key_changes SET latest = latest + 1 WHERE id = 1 RETURNING latest',
  );
  return Number(row?.latest);
}

/** A new key of the account; inside a transaction (the count of key changes moves with it). */
export async function createKey(db: SqlExecutor, accountId: string, now: number): Promise<CreatedKey> {
  const key = generateApiKey();
  const id = newKeyId();
  await db.run(
    'INSERT INTO api_keys (id, account_id, key_hash, key_prefix, created_at, key_change) VALUES (?, ?, ?, ?, ?, ?)',
    [id, accountId, hashApiKey(key), key.slice(0, DISPLAY_LENGTH), now, await nextKeyChange(db)],
  );
  return { ...((await keyById(db, id)) as KeyInfo), key };
}

export async function listKeys(db: SqlExecutor): Promise<KeyInfo[]> {
  return (await db.all<KeyRow>(`${SELECT} ORDER BY k.created_at, k.id`)).map(toKeyInfo);
}

/** Inside a transaction, like createKey (a revocation of no key, or of one already revoked, is a change of nothing). */
export async function revokeKey(db: SqlExecutor, id: string, now: number): Promise<KeyInfo | undefined> {
  await db.run('UPDATE api_keys SET revoked_at = ?, key_change = ? WHERE id = ? AND revoked_at IS NULL', [
    now,
    await nextKeyChange(db),
    id,
  ]);
  return keyById(db, id);
}

// Looking a key up by its hash needs no constant-time comparison: the index compares hashes, and
// timing can at best reveal a prefix of a sha256 digest, which says nothing about the key itself.
export async function keyOwner(db: SqlExecutor, apiKey: string): Promise<KeyOwner | undefined> {
  const row = await one<{ key_id: string; account_id: string; plan: Plan }>(
    db,
    `SELECT k.id AS key_id, k.account_id, a.plan FROM api_keys k JOIN accounts a ON a.id = k.account_id
     WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
    [hashApiKey(apiKey)],
  );
  return row && { keyId: row.key_id, accountId: row.account_id, plan: row.plan };
}

/** The number of the latest key change (created or revoked, by any process): one row, whatever the keys. */
export async function keyChangeCount(db: SqlExecutor): Promise<number> {
  return Number((await one<{ latest: number }>(db, 'SELECT latest FROM key_changes WHERE id = 1'))?.latest ?? 0);
}

/** The keys changed after change number `since`, each with whether it is revoked now (by the index on key_change). */
export async function keysChangedSince(db: SqlExecutor, since: number): Promise<KeyChange[]> {
  const rows = await db.all<{ key_hash: string; revoked_at: number | null }>(
    'SELECT key_hash, revoked_at FROM api_keys WHERE key_change > ?',
    [since],
  );
  return rows.map((row) => ({ keyHash: row.key_hash, revoked: row.revoked_at !== null }));
}

/** The sha256 (hex) of every unrevoked key. */
export async function activeKeyHashes(db: SqlExecutor): Promise<string[]> {
  return (await db.all<{ key_hash: string }>('SELECT key_hash FROM api_keys WHERE revoked_at IS NULL')).map(
    (row) => row.key_hash,
  );
}
