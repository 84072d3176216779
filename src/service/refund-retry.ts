// Settles a request that failed after its charge: the refund and the failed mark of its Idempotency-Key, in
// the store's one transaction (failRequest). A store that fails now (SQLite busy, a PostgreSQL failover, disk
// full) must not turn the client's answer into a 500: the refund is retried at once, then in the background
// until it goes through, and the client always gets the request's original error. Meanwhile the key reads
// as in progress (a repeat gets 409 with Retry-After), and the request's lease is no longer renewed, so if
// this server dies first, any server's lease sweep settles it the same way. Either path settles it once.

import type { FailedSettlement, IdempotencyRef, Store } from '../store/index.js';

/** Waits between the immediate attempts: a busy database is usually free again within milliseconds. */
const IMMEDIATE_RETRY_MS = [25, 100, 400] as const;
/** Between background attempts, once the immediate ones failed. */
const BACKGROUND_RETRY_MS = 5000;

interface Pending {
  requestId: string;
  idempotency: IdempotencyRef | undefined;
}

export class RefundRetry {
  readonly #pending = new Map<string, Pending>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Pick<Store, 'failRequest'>,
    private readonly now: () => number,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
  ) {}

  /**
   * Refunds and fails the key, retrying; never throws. Returns the store's settlement (settled false: the
   * request was settled already), or undefined when the refund was handed to the background.
   */
  async settle(requestId: string, idempotency: IdempotencyRef | undefined): Promise<FailedSettlement | undefined> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.store.failRequest(requestId, idempotency, this.now());
      } catch (error) {
        const wait = IMMEDIATE_RETRY_MS[attempt];
        if (wait === undefined) {
          this.#defer({ requestId, idempotency }, error);
          return undefined;
        }
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /** One more attempt for every pending refund (the background timer, and Service.close()). */
  async retryPending(): Promise<void> {
    for (const pending of [...this.#pending.values()]) {
      try {
        await this.store.failRequest(pending.requestId, pending.idempotency, this.now());
        this.#pending.delete(pending.requestId);
      } catch {
        // Still failing: the next round tries again, and the lease sweep of any server settles it too.
      }
    }
    if (this.#pending.size === 0) this.stop();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #defer(pending: Pending, error: unknown): void {
    this.#pending.set(pending.requestId, pending);
    this.warn(
      `refund of request ${pending.requestId} failed (${(error as Error).message}); retrying every ${BACKGROUND_RETRY_MS / 1000} s`,
    );
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.retryPending(), BACKGROUND_RETRY_MS);
      this.#timer.unref();
    }
  }
}
