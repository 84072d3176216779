// Settles a request that failed after its charge: the refund and the failed mark of its Idempotency-Key.
// A store that fails now (SQLite busy, disk full) must not turn the client's answer into a 500 or leave the
// key in progress until a restart: the refund is retried at once, then in the background until it succeeds,
// while the key is failed on its own meanwhile. The client always gets the request's original error.

import type { IdempotencyRef, Store } from '../store/index.js';

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
    private readonly store: Pick<Store, 'failRequest' | 'failIdempotent'>,
    private readonly now: () => number,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
  ) {}

  /** Requests charged and failed whose refund has not been written yet (their usage row waits for it). */
  isPending(requestId: string): boolean {
    return this.#pending.has(requestId);
  }

  /** Refunds and fails the key, retrying; never throws. Returns once settled or handed to the background. */
  async settle(requestId: string, idempotency: IdempotencyRef | undefined): Promise<void> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await this.store.failRequest(requestId, idempotency, this.now());
        return;
      } catch (error) {
        const wait = IMMEDIATE_RETRY_MS[attempt];
        if (wait === undefined) {
          this.#defer({ requestId, idempotency }, error);
          return;
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
        // Still failing: the next round tries again; a restart refunds it too (a charge with no usage row).
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
    this.warn(`refund of request ${pending.requestId} failed (${(error as Error).message}); retrying every ${BACKGROUND_RETRY_MS / 1000} s`);
    // The key must not stay in progress while the refund waits: a retry of the client would get 409 for ever.
    if (pending.idempotency) {
      try {
        this.store.failIdempotent(pending.idempotency, this.now());
      } catch {
        // The refund's own transaction fails the key too once it goes through; a restart fails it as well.
      }
    }
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.retryPending(), BACKGROUND_RETRY_MS);
      this.#timer.unref();
    }
  }
}
