// What the local service's SQLite store holds and offers: accounts, hashed API keys, the credit
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

export interface RecoveryReport {
  refundedRequests: number;
  failedIdempotencyKeys: number;
}

export interface Store {
  /** Absolute path of the SQLite file. */
  readonly path: string;

  createAccount(plan: Plan, now?: number): Account;
  /** Account, first key and an optional grant, in one transaction (what `rmbg keys create` needs). */
  createAccountWithKey(input: { plan: Plan; credits?: number; pool?: CreditPool; now?: number }): CreatedKey;
  createKey(accountId: string, now?: number): CreatedKey;
  listKeys(): KeyInfo[];
  /** Revokes a key; undefined when no key has that id. Revoking twice keeps the first time. */
  revokeKey(id: string, now?: number): KeyInfo | undefined;
  accountForKey(apiKey: string): KeyOwner | undefined;

  addCredits(target: CreditTarget, amount: number, pool: CreditPool, now?: number): Balance;
  balance(accountId: string): Balance;
  charge(accountId: string, amount: number, requestId: string, now?: number): ChargeResult;
  /** Gives back what the charge of requestId took, once; later calls (and requests never charged) give zeros. */
  refund(requestId: string, now?: number): PoolAmounts;

  beginIdempotent(accountId: string, key: string, fingerprint: string, requestId: string, now?: number): IdempotencyBegin;
  completeIdempotent(ref: IdempotencyRef, replay: StoredReplay, now?: number): void;
  failIdempotent(ref: IdempotencyRef, now?: number): void;
  /** Refund of the request's charge and the failed mark of its key, in one transaction. */
  failRequest(requestId: string, idempotency: IdempotencyRef | undefined, now?: number): PoolAmounts;
  /** Forgets an in-progress key whose request ended before anything was charged, so the key can be retried. */
  releaseIdempotent(ref: IdempotencyRef): void;
  /** Deletes replay payloads whose window closed; the rows stay so the keys stay reserved. Returns how many. */
  purgeExpiredReplays(now?: number): number;

  recordUsage(record: UsageRecord): void;
  usage(filter?: { accountId?: string; requestId?: string }): UsageRecord[];

  /** After a crash: refunds charges of requests that never finished and fails their idempotency keys. */
  recoverInterrupted(now?: number): RecoveryReport;

  close(): void;
}
