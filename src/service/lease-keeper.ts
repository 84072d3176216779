// This instance's leases: renewed every third of the lease time while its requests run, and a sweep (at start, then
// every half lease time) that refunds expired leases of any instance, so a killed server's charges come back.

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { ExpiryReport, Lease, Store } from '../store/index.js';
import type { StoreClock } from './store-clock.js';

export interface LeaseKeeperOptions {
  store: Store;
  leaseTimeMs: number;
  clock: Pick<StoreClock, 'now' | 'sync'>;
  /** Called with each sweep's report (metrics), and with errors of the timers (the database may be away). */
  onExpired?: (report: ExpiryReport) => void;
  onError?: (what: string, error: unknown) => void;
}

export class LeaseKeeper {
  readonly owner = `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  readonly #running = new Set<string>();
  readonly #timers: NodeJS.Timeout[] = [];

  constructor(private readonly options: LeaseKeeperOptions) {}

  /** How long a lease lasts unrenewed: after it, any server's sweep may settle the request. */
  get leaseTimeMs(): number {
    return this.options.leaseTimeMs;
  }

  /** A lease on the request, held (renewed) until end(requestId). */
  lease(requestId: string): Lease {
    this.#running.add(requestId);
    return { requestId, owner: this.owner, expiresAt: this.options.clock.now() + this.options.leaseTimeMs };
  }

  end(requestId: string): void {
    this.#running.delete(requestId);
  }

  /**
   * Settles the expired leases now; `everyone` settles all leases whatever their expiry, for an engine whose
   * lock proves no other server runs (a SQLite data directory), so a restart refunds a crash at once.
   */
  async sweep(everyone = false): Promise<ExpiryReport> {
    const { clock, store } = this.options;
    await clock.sync();
    const report = await store.expireLeases(clock.now(), { all: everyone });
    if (report.expiredLeases > 0) this.options.onExpired?.(report);
    return report;
  }

  start(): void {
    const { leaseTimeMs, clock, store } = this.options;
    const every = (ms: number, what: string, work: () => Promise<unknown>) => {
      // A run still going (the database slow or held up) makes the next tick wait for it: runs never pile up,
      // each holding a pooled connection, until the pool is gone.
      let running = false;
      const tick = () => {
        if (running) return;
        running = true;
        work()
          .catch((error: unknown) => this.options.onError?.(what, error))
          .finally(() => (running = false));
      };
      const timer = setInterval(tick, Math.max(100, Math.floor(ms)));
      timer.unref();
      this.#timers.push(timer);
    };
    every(leaseTimeMs / 3, 'lease renewal', () =>
      store.renewLeases(this.owner, [...this.#running], clock.now() + leaseTimeMs),
    );
    every(leaseTimeMs / 2, 'expired-lease sweep', () => this.sweep());
  }

  stop(): void {
    for (const timer of this.#timers.splice(0)) clearInterval(timer);
  }
}
