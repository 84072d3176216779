// The schema of the store as an ordered list of migrations, applied once each and recorded in
// PRAGMA user_version, so opening an existing data directory (by `serve` or the CLI) is always safe.

import type Database from 'better-sqlite3';
import { RmbgError } from '../api/errors.js';

/** Index i holds the step from user_version i to i + 1. Never edit a released step: append a new one. */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE accounts (
    id          TEXT PRIMARY KEY,
    plan        TEXT NOT NULL CHECK (plan IN ('pro', 'enterprise', 'free')),
    created_at  INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    key_hash    TEXT NOT NULL UNIQUE,
    key_prefix  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
  ) STRICT;

  -- Every credit movement is a row; a balance is the sum of its pool's rows, never a stored number.
  CREATE TABLE credit_ledger (
    id          INTEGER PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    kind        TEXT NOT NULL CHECK (kind IN ('grant', 'charge', 'refund')),
    pool        TEXT NOT NULL CHECK (pool IN ('subscription', 'payg')),
    amount      INTEGER NOT NULL,
    request_id  TEXT,
    created_at  INTEGER NOT NULL,
    CHECK ((kind = 'charge') = (amount < 0)),
    CHECK (kind = 'grant' OR request_id IS NOT NULL)
  ) STRICT;
  CREATE INDEX credit_ledger_balance ON credit_ledger (account_id, pool, amount);
  -- A request is charged at most once per pool and refunded at most once per pool, even if two
  -- processes race: the database refuses the second row.
  CREATE UNIQUE INDEX credit_ledger_once ON credit_ledger (request_id, kind, pool) WHERE request_id IS NOT NULL;

  CREATE TABLE idempotency_keys (
    account_id    TEXT NOT NULL REFERENCES accounts(id),
    key           TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('in_progress', 'succeeded', 'failed')),
    request_id    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    completed_at  INTEGER,
    payload       BLOB,
    metadata      TEXT,
    PRIMARY KEY (account_id, key)
  ) STRICT;
  CREATE INDEX idempotency_keys_purge ON idempotency_keys (completed_at) WHERE payload IS NOT NULL;

  CREATE TABLE usage_records (
    id           INTEGER PRIMARY KEY,
    request_id   TEXT NOT NULL,
    account_id   TEXT,
    key_id       TEXT,
    endpoint     TEXT NOT NULL,
    status       INTEGER NOT NULL,
    code         TEXT,
    credits      INTEGER NOT NULL,
    replayed     INTEGER NOT NULL,
    input_bytes  INTEGER,
    size         TEXT,
    format       TEXT,
    width        INTEGER,
    height       INTEGER,
    duration_ms  INTEGER NOT NULL,
    created_at   INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX usage_records_request ON usage_records (request_id);
  CREATE INDEX usage_records_account ON usage_records (account_id, created_at);
  `,
];

/** Brings the database to the latest schema. Safe to run on every open, from several processes. */
export function migrate(db: Database.Database): number {
  const apply = db.transaction(() => {
    // Read inside the write transaction: a second process that opened meanwhile sees the result, not a stale version.
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current > MIGRATIONS.length) {
      throw new RmbgError('io_error', `the data directory was written by a newer rmbg (schema ${current}; this version knows ${MIGRATIONS.length})`);
    }
    for (let version = current; version < MIGRATIONS.length; version++) {
      db.exec(MIGRATIONS[version] as string);
    }
    db.pragma(`user_version = ${MIGRATIONS.length}`);
    return MIGRATIONS.length - current;
  });
  return apply.immediate();
}
