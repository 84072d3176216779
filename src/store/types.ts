// What the local service's store holds and offers: accounts, hashed API keys, the credit
// ledger, idempotency records and usage records. Times are milliseconds since the Unix epoch.

export const PLANS = ['pro', 'enterprise', 'free'] as const;
export type Plan = (typeof PLANS)[number];

export const CREDIT_POOLS = ['subscription', 'payg'] as const;
export type CreditPool = (typeof CREDIT_POOLS)[number];

export interface Balance {
  subscription: number;
  payg: number;
  total: number;
}

/** What one charge took from each pool (and so what its refund gives back). */
export interface PoolAmounts {
  subscription: number;
  payg: number;
}

/** A refund: whether this call closed the lease (false: the request was settled already), and what it gave back. */
export interface RefundOutcome {
  settled: boolean;
  refunded: PoolAmounts;
}

export type ChargeResult = { ok: true; taken: PoolAmounts } | { ok: false; balance: Balance };

export interface Account {
  id: string;
  plan: Plan;
  createdAt: number;
}

/** An API key as listed: never the key itself, which exists only in the answer to its creation. */
export interface KeyInfo {
  id: string;
  accountId: string;
  plan: Plan;
  /** The first characters of the key, enough to recognise it. */
  keyPrefix: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface CreatedKey extends KeyInfo {
  /** The full key: shown once, stored only as its sha256. */
  key: string;
}

/** The caller behind an active (unrevoked) key. */
export interface KeyOwner {
  keyId: string;
  accountId: string;
  plan: Plan;
}

/** A key created or revoked since some change: its hash, and whether it is revoked now. */
export interface KeyChange {
  keyHash: string;
  revoked: boolean;
}

export type CreditTarget = { accountId: string } | { apiKey: string };

export interface StoredReplay {
  payload: Buffer;
  /** JSON-serialisable description of the payload, owned by the service. */
  metadata: unknown;
}

export type IdempotencyBegin =
  | { state: 'new' }
  | { state: 'in_progress'; requestId: string }
  | { state: 'mismatch'; requestId: string }
  | { state: 'succeeded'; requestId: string; completedAt: number; replay: StoredReplay }
  | { state: 'expired'; requestId: string; completedAt: number }
  | { state: 'failed'; requestId: string; completedAt: number };

export interface IdempotencyRef {
  accountId: string;
  key: string;
  /** The request that holds the key; a record is only changed by the request that created it. */
  requestId: string;
}

export type UsageEndpoint = 'removebg' | 'account';

export interface UsageRecord {
  requestId: string;
  accountId: string | null;
  keyId: string | null;
  endpoint: UsageEndpoint;
  /** HTTP status the request was answered with. */
  status: number;
  /** Error code; null on success. */
  code: string | null;
  /** Credits kept by this request (0 when refunded or replayed). */
  credits: number;
  replayed: boolean;
  /** Input bytes (file or base64) when known. */
  inputBytes: number | null;
  size: string | null;
  format: string | null;
  width: number | null;
  height: number | null;
  durationMs: number;
  createdAt: number;
}

/** A request's hold on its work: renewed by its owner while it runs, settled as failed by anyone once expired. */
export interface Lease {
  requestId: string;
  /** The instance that runs the request (its id is random per process). */
  owner: string;
  expiresAt: number;
}

export interface RateWindow {
  /** When the key's current window began. */
  start: number;
  /** Requests counted in it, this one included (over the limit ones too). */
  count: number;
}

export interface ExpiryReport {
  /** Requests settled as failed because their lease expired. */
  expiredLeases: number;
  /** Of those, requests whose charge was refunded. */
  refundedRequests: number;
  /** Of those, requests whose Idempotency-Key is now failed instead of in progress. */
  failedIdempotencyKeys: number;
}

/** An account whose kept balance is not the sum of its ledger rows. */
export interface LedgerMismatch {
  accountId: string;
  kept: Balance;
  ledger: Balance;
}

/** What one purge deleted. */
export interface PurgeReport {
  /** Replay payloads past the replay window (their keys stay reserved). */
  replays: number;
  /** Idempotency records completed longer ago than the key retention (those keys are free again). */
  keys: number;
  /** Usage records older than their retention. */
  usageRecords: number;
}

/** Where a charged request stands: still leased (unsettled), delivered, or refunded. */
export type Settlement = 'leased' | 'delivered' | 'refunded';

export type StoreEngine = 'sqlite' | 'postgres';

/**
 * The store, whichever engine holds it (SQLite file, PostgreSQL database): every call is asynchronous, and
 * every write that must be all-or-nothing is one transaction of the engine's.
 */
export interface Store {
  readonly engine: StoreEngine;
  /** The SQLite file's path, or the PostgreSQL URL without its password. */
  readonly path: string;

  createAccount(plan: Plan, now?: number): Promise<Account>;
  /** Account, first key and an optional grant, in one transaction (what `rmbg keys create` needs). */
  createAccountWithKey(input: { plan: Plan; credits?: number; pool?: CreditPool; now?: number }): Promise<CreatedKey>;
  createKey(accountId: string, now?: number): Promise<CreatedKey>;
  listKeys(): Promise<KeyInfo[]>;
  /** Revokes a key; undefined when no key has that id. Revoking twice keeps the first time. */
  revokeKey(id: string, now?: number): Promise<KeyInfo | undefined>;
  accountForKey(apiKey: string): Promise<KeyOwner | undefined>;
  /** The number of the latest key change (a key created or revoked, by any process): one row read. */
  keyChangeCount(): Promise<number>;
  /** The keys created or revoked after the change numbered `since`. */
  keysChangedSince(since: number): Promise<KeyChange[]>;
  /** The sha256 (hex) of every unrevoked key, as accountForKey hashes them. */
  activeKeyHashes(): Promise<string[]>;

  addCredits(target: CreditTarget, amount: number, pool: CreditPool, now?: number): Promise<Balance>;
  /** The account's kept balance: one row read, whatever the size of its ledger. */
  balance(accountId: string): Promise<Balance>;
  /** The audit: accounts whose kept balance differs from the sum of their ledger rows (an empty list when sound). */
  auditBalances(): Promise<LedgerMismatch[]>;

  /** Reserves the key (and opens the request's lease) when new; otherwise says what the key holds. */
  beginIdempotent(
    accountId: string,
    key: string,
    fingerprint: string,
    lease: Lease,
    now?: number,
  ): Promise<IdempotencyBegin>;
  /** Charges the request under its lease (opened here for a request without a key). */
  charge(accountId: string, amount: number, lease: Lease, now?: number): Promise<ChargeResult>;
  /**
   * Settles a charged request as delivered: its lease closed and its key (if any) succeeded with the replay, in
   * one transaction. False when the request was settled already (its lease expired and another instance refunded
   * it): the result must not be handed out then.
   */
  deliver(
    requestId: string,
    idempotency: { ref: IdempotencyRef; replay: StoredReplay } | undefined,
    now?: number,
  ): Promise<boolean>;
  /**
   * Marks the result of a request without an Idempotency-Key delivered while its lease stays (renewed by its
   * server) until the answer was sent; deliver() then closes it, and a refund of a result nobody received
   * (refundUnreceived, or the sweep once the lease expired: the server killed meanwhile) gives the charge back.
   * False when the request has no lease (settled already, as deliver's false).
   */
  holdDelivered(requestId: string, now?: number): Promise<boolean>;
  /**
   * Refunds a request that failed after its charge: lease closed, charge given back, key failed, in one
   * transaction; once. `settled` false: the lease was closed already (delivered, or refunded), or is held past its
   * delivery (holdDelivered): nothing changed.
   */
  refund(requestId: string, idempotency: IdempotencyRef | undefined, now?: number): Promise<RefundOutcome>;
  /**
   * Refunds a request without an Idempotency-Key whose result nobody received (its client was answered an error
   * while its settlement was unknown, or left before the answer was sent): as refund(), a lease held past its
   * delivery included. Once: a request settled already is left as it is.
   */
  refundUnreceived(requestId: string, now?: number): Promise<RefundOutcome>;
  /** Forgets an in-progress key (and its lease) whose request ended before anything was charged, so the key can be retried. */
  releaseIdempotent(ref: IdempotencyRef): Promise<void>;
  /**
   * Deletes replay payloads past their window (the keys stay reserved), and idempotency and usage records past
   * their retention, at most PURGE_MAX_BATCHES batches a table per call.
   */
  purgeExpired(now?: number): Promise<PurgeReport>;
  /**
   * Where request `requestId` stands, read after a settlement whose answer was lost (the COMMIT may have gone
   * through): its lease still open, delivered (closed without a refund, or held past its delivery), or refunded.
   */
  settlementOf(requestId: string): Promise<Settlement>;

  /** Extends the leases of `owner`'s running requests to expiresAt, in one statement. */
  renewLeases(owner: string, requestIds: readonly string[], expiresAt: number): Promise<number>;
  /**
   * Refunds (as `refund` does) every request whose lease expired by `now`, whoever's, passing over leases another
   * transaction holds. `all`: every lease (a SQLite server at start, alone on its file).
   */
  expireLeases(now: number, options?: { all?: boolean }): Promise<ExpiryReport>;

  /** Counts one request of the key in the window shared by every instance on this store. */
  countRequest(keyId: string, now: number, windowMs: number): Promise<RateWindow>;

  recordUsage(record: UsageRecord): Promise<void>;
  usage(filter?: { accountId?: string; requestId?: string }): Promise<UsageRecord[]>;

  /** The database's clock (ms since the epoch): what leases and rate windows are measured by on a shared store. */
  clock(): Promise<number>;
  /** The schema version the database is at; rejects when the database cannot be reached. */
  schemaVersion(): Promise<number>;
  /** The version this rmbg migrates to. */
  readonly latestSchemaVersion: number;

  close(): Promise<void>;
}
