// Refunds a request that failed after its charge (store.refund): every refund of a request goes through here. A
// refusing store must not turn the client's answer into a 500, so the refund is retried, and meanwhile any
// server's lease sweep may settle it instead.

import type { IdempotencyRef, RefundOutcome, Store } from '../store/index.js';
import type { DatabaseBudget } from './answer-bound.js';
import { messageOf } from '../api/errors.js';

/** Waits between the immediate attempts: a busy database is usually free again within milliseconds. */
const IMMEDIATE_RETRY_MS = [25, 100, 400] as const;
/** Between background attempts, once the immediate ones failed. */
const BACKGROUND_RETRY_MS = 5000;

interface Pending {
  requestId: string;
  idempotency: IdempotencyRef | undefined;
  /** Nobody received the result (no Idempotency-Key, answered an error): a delivered charge is refunded too. */
  unreceived: boolean;
}

export class Refunder {
  readonly #pending = new Map<string, Pending>();
  #timer: NodeJS.Timeout | undefined;
  /** The round in progress: a tick while it runs (the database slow to answer) joins it instead of piling up. */
  #retrying: Promise<void> | undefined;

  constructor(
    private readonly store: Pick<Store, 'refund' | 'refundUnreceived'>,
    private readonly now: () => number,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
  ) {}

  /**
   * Refunds the charge and fails the key; never throws. A refusing store is tried again at once, then in the
   * background (undefined is returned then). `settled` false: the request was settled already. `unreceived`:
   * the store's refundUnreceived (a result nobody received, its settlement unknown), else its refund.
   * `budget`: the request's time left to wait on the database (answer-bound.ts); the immediate attempts stop
   * when it is spent, and the refund goes to the background (an attempt still in flight may yet land: a second
   * one then finds it settled).
   */
  async refund(
    requestId: string,
    idempotency: IdempotencyRef | undefined,
    unreceived = false,
    budget?: DatabaseBudget,
  ): Promise<RefundOutcome | undefined> {
    const pending = { requestId, idempotency, unreceived };
    for (let attempt = 0; ; attempt += 1) {
      try {
        const trying = this.#attempt(pending);
        return await (budget ? budget.bound(trying) : trying);
      } catch (error) {
        const wait = IMMEDIATE_RETRY_MS[attempt];
        if (wait === undefined || (budget && budget.remainingMs() <= wait)) {
          this.#defer(pending, error);
          return undefined;
        }
        if (budget) await budget.pause(wait).catch(() => {});
        else await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /**
   * One attempt within `budget`, neither retried nor handed to the background: for a caller that reads the
   * request's settlement again itself and tries again (a held result, remove-background.ts settleHeldResult).
   * Never throws: undefined when the store did not answer.
   */
  refundOnce(
    requestId: string,
    idempotency: IdempotencyRef | undefined,
    budget: DatabaseBudget,
  ): Promise<RefundOutcome | undefined> {
    return budget.bound(this.#attempt({ requestId, idempotency, unreceived: false })).catch(() => undefined);
  }

  /** One more attempt for every refund handed to the background (its timer, and Service.close()). */
  retryPending(): Promise<void> {
    this.#retrying ??= this.#retryRound().finally(() => (this.#retrying = undefined));
    return this.#retrying;
  }

  async #retryRound(): Promise<void> {
    for (const pending of [...this.#pending.values()]) {
      try {
        await this.#attempt(pending);
        this.#pending.delete(pending.requestId);
      } catch {
        // Still failing: the next round tries again, and the lease sweep of any server settles it too.
      }
    }
    if (this.#pending.size === 0) this.stop();
  }

  #attempt(pending: Pending): Promise<RefundOutcome> {
    return pending.unreceived
      ? this.store.refundUnreceived(pending.requestId, this.now())
      : this.store.refund(pending.requestId, pending.idempotency, this.now());
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #defer(pending: Pending, error: unknown): void {
    this.#pending.set(pending.requestId, pending);
    this.warn(
      `refund of request ${pending.requestId} failed (${messageOf(error)}); retrying every ${BACKGROUND_RETRY_MS / 1000} s`,
    );
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.retryPending(), BACKGROUND_RETRY_MS);
      this.#timer.unref();
    }
  }
}
