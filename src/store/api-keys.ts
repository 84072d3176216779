// API keys: generation, hashing, and the api_keys table. Only the sha256 of a key is stored; the
// key itself exists in the answer to its creation and in the caller's configuration, nowhere else.

import { createHash, randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { CreatedKey, KeyInfo, KeyOwner, Plan } from './types.js';

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
  return 'key_' + randomBytes(8).toString('hex');
}

interface KeyRow {
  id: string;
  account_id: string;
  plan: Plan;
  key_prefix: string;
  created_at: number;
  revoked_at: number | null;
}

function toKeyInfo(row: KeyRow): KeyInfo {
  return { id: row.id, accountId: row.account_id, plan: row.plan, keyPrefix: row.key_prefix, createdAt: row.created_at, revokedAt: row.revoked_at };
}

export function apiKeysTable(db: Database.Database) {
  const insert = db.prepare('INSERT INTO api_keys (id, account_id, key_hash, key_prefix, created_at) VALUES (?, ?, ?, ?, ?)');
  const select = `SELECT k.id, k.account_id, a.plan, k.key_prefix, k.created_at, k.revoked_at FROM api_keys k JOIN accounts a ON a.id = k.account_id`;
  const all = db.prepare<[], KeyRow>(`${select} ORDER BY k.created_at, k.id`);
  const byId = db.prepare<[string], KeyRow>(`${select} WHERE k.id = ?`);
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');
  // Looking a key up by its hash needs no constant-time comparison: the index compares hashes, and
  // timing can at best reveal a prefix of a sha256 digest, which says nothing about the key itself.
  const owner = db.prepare<[string], { key_id: string; account_id: string; plan: Plan }>(
    `SELECT k.id AS key_id, k.account_id, a.plan FROM api_keys k JOIN accounts a ON a.id = k.account_id
     WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
  );

  return {
    create(accountId: string, now: number): CreatedKey {
      const key = generateApiKey();
      const id = newKeyId();
      insert.run(id, accountId, hashApiKey(key), key.slice(0, DISPLAY_LENGTH), now);
      return { ...toKeyInfo(byId.get(id) as KeyRow), key };
    },
    list(): KeyInfo[] {
      return all.all().map(toKeyInfo);
    },
    revoke(id: string, now: number): KeyInfo | undefined {
      revoke.run(now, id);
      const row = byId.get(id);
      return row && toKeyInfo(row);
    },
    owner(apiKey: string): KeyOwner | undefined {
      const row = owner.get(hashApiKey(apiKey));
      return row && { keyId: row.key_id, accountId: row.account_id, plan: row.plan };
    },
  };
}
