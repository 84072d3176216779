// The schema as ordered lists of migrations, one list per engine with the same versions, written once with
// each engine's spelling of the types: index i holds the step from version i to i + 1. Never change what a
// released step creates: append a new one to both lists.

/** Version 2: leases (work in progress and its unsettled charge) and the shared rate-limit windows. */
const LEASES_AND_RATE_WINDOWS = (bigint: string) => `
  -- A request that holds something to settle: a reserved Idempotency-Key, a charge, or both. The row lives
  -- until the request is settled (delivered or refunded, in the same transaction that deletes it); its owner
  -- renews expires_at while it runs, and any instance settles a row whose lease expired as failed.
  CREATE TABLE leases (
    request_id  TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    idem_key    TEXT,
    owner       TEXT NOT NULL,
    expires_at  ${bigint} NOT NULL,
    charged     ${bigint} NOT NULL DEFAULT 0,
    created_at  ${bigint} NOT NULL
  );
  CREATE INDEX leases_expiry ON leases (expires_at);
  CREATE INDEX leases_owner ON leases (owner);

  -- Per-key fixed one-minute windows, shared by every instance on this database.
  CREATE TABLE rate_windows (
    key_id        TEXT PRIMARY KEY,
    window_start  ${bigint} NOT NULL,
    count         ${bigint} NOT NULL
  );

  -- Version 1 decided what to refund after a crash from missing usage records; from now on the lease does.
  -- Charges a crashed version-1 server left unsettled, and keys it left in progress, become expired leases.
  INSERT INTO leases (request_id, account_id, idem_key, owner, expires_at, charged, created_at)
    SELECT i.request_id, i.account_id, i.key, 'schema-1', 0, 0, i.created_at FROM idempotency_keys i WHERE i.state = 'in_progress';
  INSERT INTO leases (request_id, account_id, idem_key, owner, expires_at, charged, created_at)
    SELECT l.request_id, MIN(l.account_id), NULL, 'schema-1', 0, -SUM(l.amount), MIN(l.created_at) FROM credit_ledger l
    WHERE l.kind = 'charge'
      AND NOT EXISTS (SELECT 1 FROM usage_records u WHERE u.request_id = l.request_id)
      AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.request_id = l.request_id AND r.kind = 'refund')
    GROUP BY l.request_id
  ON CONFLICT (request_id) DO UPDATE SET charged = excluded.charged;
`;

/** How the two engines spell the same column types. */
interface Types {
  int: string;
  blob: string;
  /** An auto-numbered row id. */
  rowId: string;
  /** SQLite's STRICT tables (types enforced); nothing on PostgreSQL, whose types always are. */
  strict: string;
}

const SQLITE: Types = { int: 'INTEGER', blob: 'BLOB', rowId: 'INTEGER PRIMARY KEY', strict: ' STRICT' };
/** BIGINT for millisecond times and credits, BYTEA for payloads. */
const POSTGRES: Types = { int: 'BIGINT', blob: 'BYTEA', rowId: 'BIGSERIAL PRIMARY KEY', strict: '' };

/** Version 1: accounts, keys, the ledger, idempotency records, usage records. */
const FIRST_SCHEMA = (t: Types) => `
  CREATE TABLE accounts (
    id          TEXT PRIMARY KEY,
    plan        TEXT NOT NULL CHECK (plan IN ('pro', 'enterprise', 'free')),
    created_at  ${t.int} NOT NULL
  )${t.strict};

  CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    key_hash    TEXT NOT NULL UNIQUE,
    key_prefix  TEXT NOT NULL,
    created_at  ${t.int} NOT NULL,
    revoked_at  ${t.int}
  )${t.strict};

  -- Every credit movement is a row; a balance is the sum of its pool's rows, never a stored number.
  CREATE TABLE credit_ledger (
    id          ${t.rowId},
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    kind        TEXT NOT NULL CHECK (kind IN ('grant', 'charge', 'refund')),
    pool        TEXT NOT NULL CHECK (pool IN ('subscription', 'payg')),
    amount      ${t.int} NOT NULL,
    request_id  TEXT,
    created_at  ${t.int} NOT NULL,
    CHECK ((kind = 'charge') = (amount < 0)),
    CHECK (kind = 'grant' OR request_id IS NOT NULL)
  )${t.strict};
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
    created_at    ${t.int} NOT NULL,
    completed_at  ${t.int},
    payload       ${t.blob},
    metadata      TEXT,
    PRIMARY KEY (account_id, key)
  )${t.strict};
  CREATE INDEX idempotency_keys_purge ON idempotency_keys (completed_at) WHERE payload IS NOT NULL;

  CREATE TABLE usage_records (
    id           ${t.rowId},
    request_id   TEXT NOT NULL,
    account_id   TEXT,
    key_id       TEXT,
    endpoint     TEXT NOT NULL,
    status       ${t.int} NOT NULL,
    code         TEXT,
    credits      ${t.int} NOT NULL,
    replayed     ${t.int} NOT NULL,
    input_bytes  ${t.int},
    size         TEXT,
    format       TEXT,
    width        ${t.int},
    height       ${t.int},
    duration_ms  ${t.int} NOT NULL,
    created_at   ${t.int} NOT NULL
  )${t.strict};
  CREATE INDEX usage_records_request ON usage_records (request_id);
  CREATE INDEX usage_records_account ON usage_records (account_id, created_at);
`;

/**
 * Version 3: balances kept per account and pool with each ledger row (a charge reads one row; the ledger stays the
 * audit trail), and indexes for deleting old idempotency and usage records.
 */
const KEPT_BALANCES = (t: Types) => `
  ALTER TABLE accounts ADD COLUMN subscription_credits ${t.int} NOT NULL DEFAULT 0;
  ALTER TABLE accounts ADD COLUMN payg_credits ${t.int} NOT NULL DEFAULT 0;
  UPDATE accounts SET
    subscription_credits = COALESCE((SELECT SUM(l.amount) FROM credit_ledger l WHERE l.account_id = accounts.id AND l.pool = 'subscription'), 0),
    payg_credits = COALESCE((SELECT SUM(l.amount) FROM credit_ledger l WHERE l.account_id = accounts.id AND l.pool = 'payg'), 0);
  CREATE INDEX idempotency_keys_completed ON idempotency_keys (completed_at);
  CREATE INDEX usage_records_created ON usage_records (created_at);
`;

/**
 * Version 4: a one-row count of the key changes (a key created or revoked), bumped in the transaction that makes
 * the change, and each key's number of the change that last wrote it: a server learns from one row whether its set
 * of valid keys is stale, and then reads only the keys changed since.
 */
const KEY_CHANGES = (t: Types) => `
  CREATE TABLE key_changes (
    id      ${t.int} PRIMARY KEY CHECK (id = 1),
    latest  ${t.int} NOT NULL
  )${t.strict};
  INSERT INTO key_changes (id, latest) VALUES (1, 0);
  ALTER TABLE api_keys ADD COLUMN key_change ${t.int} NOT NULL DEFAULT 0;
  CREATE INDEX api_keys_key_change ON api_keys (key_change);
`;

/**
 * Version 5: a lease kept past its delivery (delivered_at) for a request without an Idempotency-Key, until its
 * answer was sent: a server killed meanwhile leaves it to the sweep, which refunds the result nobody received.
 */
const DELIVERED_LEASES = (t: Types) => `
  ALTER TABLE leases ADD COLUMN delivered_at ${t.int};
`;

export const SQLITE_MIGRATIONS: readonly string[] = [
  FIRST_SCHEMA(SQLITE),
  LEASES_AND_RATE_WINDOWS(SQLITE.int),
  KEPT_BALANCES(SQLITE),
  KEY_CHANGES(SQLITE),
  DELIVERED_LEASES(SQLITE),
];

export const POSTGRES_MIGRATIONS: readonly string[] = [
  FIRST_SCHEMA(POSTGRES),
  LEASES_AND_RATE_WINDOWS(POSTGRES.int),
  KEPT_BALANCES(POSTGRES),
  KEY_CHANGES(POSTGRES),
  DELIVERED_LEASES(POSTGRES),
];
