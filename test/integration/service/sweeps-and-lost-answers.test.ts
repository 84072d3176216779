// The service's side of issue #20: a lease sweep never starts while the last one still runs; a deliver whose
// COMMIT went through but whose answer was lost is read back (200, charged once) instead of 503 after a
// charge; and, on a real PostgreSQL, a server whose clock runs 60 s ahead neither refunds another server's
// live work nor restarts its rate windows (the service reads time on the database's clock).

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { DEFAULT_OPTIONS } from '../../../src/api/options.js';
import { createService, type Service } from '../../../src/service/index.js';
import { LeaseKeeper } from '../../../src/service/lease-keeper.js';
import { StoreClock } from '../../../src/service/store-clock.js';
import type { RemoveRequest } from '../../../src/service/types.js';
import { openStore, type ExpiryReport, type Store } from '../../../src/store/index.js';
import { freshDatabase, pgRows } from '../../helpers/postgres.js';
import { rejectionOf } from '../../helpers/rejection.js';
import { sqliteRows } from '../../helpers/sqlite-file.js';
import { testEngine, testImage, TEST_SERVICE_LIMITS, type TestEngine } from '../../helpers/sharp-test-engine.js';

let image: Buffer;
beforeAll(async () => {
  image = await testImage(64, 48);
});

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function request(apiKey: string, idempotencyKey?: string): RemoveRequest {
  return {
    apiKey,
    idempotencyKey,
    source: { kind: 'file', data: image },
    options: { ...DEFAULT_OPTIONS },
    requestId: randomUUID(),
  };
}

async function serve(store: Store, engine: TestEngine, now?: () => number, leaseTimeMs = 2000): Promise<Service> {
  const service = await createService({
    store,
    engine,
    ...TEST_SERVICE_LIMITS,
    leaseTimeMs,
    ...(now && { now }),
  });
  cleanups.push(
    () => service.close(),
    () => engine.release(),
  );
  return service;
}

describe('the lease sweep', () => {
  it('never starts while the last one runs (a held-up database would otherwise take one connection per tick)', async () => {
    vi.useFakeTimers();
    let calls = 0;
    let finish: (report: ExpiryReport) => void = () => undefined;
    const store = {
      engine: 'postgres',
      clock: async () => Date.now(),
      renewLeases: async () => 0,
      expireLeases: () => {
        calls += 1;
        return new Promise<ExpiryReport>((resolve) => (finish = resolve));
      },
    } as unknown as Store;
    const keeper = new LeaseKeeper({ store, leaseTimeMs: 2000, clock: { now: Date.now, sync: async () => {} } });
    keeper.start();
    cleanups.push(() => keeper.stop());
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toBe(1);
    finish({ expiredLeases: 0, refundedRequests: 0, failedIdempotencyKeys: 0 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(2);
  });
});

describe('the purge of old records', () => {
  it('does not hold up the start (a large backlog takes minutes), and close() waits for the run in progress', async () => {
    let finish: () => void = () => undefined;
    let purges = 0;
    const store = {
      engine: 'sqlite',
      clock: async () => Date.now(),
      renewLeases: async () => 0,
      expireLeases: async () => ({ expiredLeases: 0, refundedRequests: 0, failedIdempotencyKeys: 0 }),
      purgeExpired: () => {
        purges += 1;
        return new Promise((resolve) => (finish = () => resolve({ replays: 0, keys: 0, usageRecords: 0 })));
      },
    } as unknown as Store;
    const started = createService({ store, engine: testEngine(), ...TEST_SERVICE_LIMITS });
    const service = await Promise.race([
      started,
      new Promise<'held up'>((resolve) => setTimeout(() => resolve('held up'), 2000)),
    ]);
    expect(service).not.toBe('held up');
    expect(purges).toBe(1);
    let closed = false;
    const closing = (service as Service).close().then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(false);
    finish();
    await closing;
  });
});

describe("a SQLite server's start-up sweep", () => {
  it('settles every lease left behind, dating the refund and the failed key by its clock', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rmbg-startup-sweep-'));
    const store = await openStore(dir);
    cleanups.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => store.close(),
    );
    const { accountId } = await store.createAccountWithKey({ plan: 'pro', credits: 5 });
    const T = 1_700_000_000_000;
    // Left by the crashed server: a keyed, charged request whose lease has not expired yet.
    const lease = { requestId: 'crashed', owner: 'dead', expiresAt: T + 30_000 };
    await store.beginIdempotent(accountId, 'k', 'fp', lease, T - 1000);
    await store.charge(accountId, 1, lease, T - 1000);
    await createService({ store, engine: testEngine(), ...TEST_SERVICE_LIMITS, soleServer: true, now: () => T }).then(
      (service) => cleanups.push(() => service.close()),
    );
    expect(await store.balance(accountId)).toEqual({ subscription: 0, payg: 5, total: 5 });
    expect(await sqliteRows(store.path, "SELECT created_at FROM credit_ledger WHERE kind = 'refund'")).toEqual([
      { created_at: T },
    ]);
    expect(await sqliteRows(store.path, 'SELECT state, completed_at FROM idempotency_keys')).toEqual([
      { state: 'failed', completed_at: T },
    ]);
  });
});

describe('a deliver whose answer is lost', () => {
  let dir: string;
  let store: Store;
  let key: string;
  let accountId: string;
  let postgresUrl: string | undefined;
  /**
   * awayMs: after the lost answer, every call of the store fails for this long (the database away).
   * postgres: a fresh real PostgreSQL database instead of a SQLite file.
   */
  async function start(
    deliverFails: 'after-commit' | 'before-commit' | 'commit-after-reread',
    awayMs = 0,
    options: { leaseTimeMs?: number; postgres?: boolean } = {},
  ) {
    dir = mkdtempSync(join(tmpdir(), 'rmbg-lost-reply-'));
    postgresUrl = options.postgres ? await freshDatabase() : undefined;
    store = await openStore(postgresUrl ? { engine: 'postgres', url: postgresUrl } : dir);
    cleanups.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => store.close(),
    );
    ({ key, accountId } = await store.createAccountWithKey({ plan: 'pro', credits: 5 }));
    const lost = () =>
      new RmbgError(
        'service_unavailable',
        'the database is unreachable (Connection terminated unexpectedly); retry shortly',
        { retryAfterSeconds: 2 },
      );
    let applying: (() => Promise<unknown>) | undefined;
    let awayUntil = 0;
    let lostOnce = false;
    const loseAnswer = () => {
      awayUntil = Date.now() + awayMs;
      return lost();
    };
    /** The request's delivery (deliver with a key, holdDelivered without): its first answer lost, as set. */
    const losing =
      <A extends unknown[]>(settle: (...args: A) => Promise<boolean>) =>
      async (...args: A): Promise<boolean> => {
        if (lostOnce) return settle(...args);
        lostOnce = true;
        if (deliverFails === 'before-commit') throw loseAnswer();
        if (deliverFails === 'commit-after-reread') {
          applying = () => settle(...args);
          throw loseAnswer();
        }
        await settle(...args);
        throw loseAnswer();
      };
    const flaky: Store = {
      ...store,
      deliver: losing(store.deliver),
      holdDelivered: losing(store.holdDelivered),
      // The COMMIT whose answer was lost lands just after the re-read saw the lease still open.
      settlementOf: async (requestId) => {
        const state = await store.settlementOf(requestId);
        await applying?.();
        applying = undefined;
        return state;
      },
    };
    // While the database is away, every call fails as a lost connection does.
    const away = new Proxy(flaky, {
      get(target, name) {
        const value = Reflect.get(target, name) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) =>
          Date.now() < awayUntil ? Promise.reject(lost()) : (value as (...a: unknown[]) => unknown)(...args);
      },
    });
    return serve(away, testEngine(), undefined, options.leaseTimeMs ?? (awayMs > 0 ? 30_000 : undefined));
  }

  it('after its COMMIT: the request was delivered, so the caller gets the result, charged once', async () => {
    const service = await start('after-commit');
    const outcome = await service.handleRemoveRequest(request(key));
    expect([outcome.creditsCharged, outcome.image.width]).toEqual([1, 64]);
    expect(await store.balance(accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });
    expect(await store.usage({ requestId: outcome.requestId })).toEqual([
      expect.objectContaining({ status: 200, credits: 1 }),
    ]);
  });

  it('applied only after the re-read saw the lease open: the refund finds it settled, the result is answered, charged once', async () => {
    const service = await start('commit-after-reread');
    const outcome = await service.handleRemoveRequest(request(key));
    expect([outcome.creditsCharged, outcome.image.width]).toEqual([1, 64]);
    expect(await store.balance(accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });
    expect(await store.usage({ requestId: outcome.requestId })).toEqual([
      expect.objectContaining({ status: 200, credits: 1 }),
    ]);
  });

  it('after its COMMIT, the database then away 3 s: the result is held until the settlement is read, charged once', async () => {
    const service = await start('after-commit', 3000);
    const outcome = await service.handleRemoveRequest(request(key));
    expect([outcome.creditsCharged, outcome.image.width]).toEqual([1, 64]);
    expect(await store.balance(accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });
  });

  it('before its COMMIT, the database then away 3 s: refunded before the answer, 503 and the charge back', async () => {
    const service = await start('before-commit', 3000);
    const error = await rejectionOf(service.handleRemoveRequest(request(key, 'away-1')));
    expect([error.status, error.code]).toEqual([503, 'service_unavailable']);
    // Read at once, not after a background retry: the refund came before the answer, and the key is failed.
    expect(await store.balance(accountId)).toEqual({ subscription: 0, payg: 5, total: 5 });
    const again = await rejectionOf(service.handleRemoveRequest(request(key, 'away-1')));
    expect([again.status, again.code]).toEqual([409, 'idempotency_key_failed']);
  });

  it('after its COMMIT, on PostgreSQL, the database then away past the lease: 503 without a key, and the charge back once the database is back', async () => {
    // Away 3 s, the lease 1 s: the settlement is still unknown when the held result is given up.
    const service = await start('after-commit', 3000, { leaseTimeMs: 1000, postgres: true });
    const error = await rejectionOf(service.handleRemoveRequest(request(key)));
    expect([error.status, error.code]).toEqual([503, 'service_unavailable']);
    // Nobody can collect the delivered result without a key: the background refund (every 5 s) gives it back.
    await expect
      .poll(() => store.balance(accountId), { timeout: 20_000, interval: 200 })
      .toEqual({ subscription: 0, payg: 5, total: 5 });
    expect(
      await pgRows(
        postgresUrl as string,
        'SELECT kind, CAST(amount AS INTEGER) AS amount FROM credit_ledger WHERE request_id IS NOT NULL ORDER BY id',
      ),
    ).toEqual([
      { kind: 'charge', amount: -1 },
      { kind: 'refund', amount: 1 },
    ]);
  }, 30_000);

  it('before its COMMIT: nothing was delivered, so the caller gets 503 and the charge back', async () => {
    const service = await start('before-commit');
    const error = await rejectionOf(service.handleRemoveRequest(request(key)));
    expect([error.status, error.code]).toEqual([503, 'service_unavailable']);
    expect(await store.balance(accountId)).toEqual({ subscription: 0, payg: 5, total: 5 });
  });
});

describe('servers whose clocks disagree, on one PostgreSQL', () => {
  it("a server 60 s ahead refunds nothing of another's live work, and counts into the same rate window", async () => {
    const url = await freshDatabase();
    const stores = await Promise.all([0, 1].map(() => openStore({ engine: 'postgres', url })));
    cleanups.push(() => Promise.all(stores.map((s) => s.close())));
    const [storeA, storeB] = stores as [Store, Store];
    const { key, accountId } = await storeA.createAccountWithKey({ plan: 'pro', credits: 5 });
    const engineA = testEngine({ kind: 'gated' });
    const a = await serve(storeA, engineA);
    const running = a.handleRemoveRequest(request(key, 'order-1'));
    await engineA.started(1);
    expect(await pgRows(url, 'SELECT CAST(charged AS INTEGER) AS charged FROM leases')).toEqual([{ charged: 1 }]);

    // B starts (its start-up sweep runs now) with its clock a minute ahead: on its own clock A's lease, at most
    // 2 s long, expired long ago.
    const b = await serve(storeB, testEngine(), () => Date.now() + 60_000);
    engineA.release();
    const outcome = await running;
    expect([outcome.creditsCharged, outcome.replayed]).toEqual([1, false]);
    expect(await storeA.balance(accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });
    expect(await pgRows(url, "SELECT kind FROM credit_ledger WHERE kind = 'refund'")).toEqual([]);

    // A's request opened the key's window; B counts into it rather than starting a new one a minute later.
    const account = await b.getAccount(key);
    expect(account.rateLimit.remaining).toBe(TEST_SERVICE_LIMITS.rateLimit - 2);
  });

  it("a server whose every round trip to the database takes over 250 ms corrects a 60 s step of its clock: it refunds nothing of another's live work", async () => {
    const url = await freshDatabase();
    const stores = await Promise.all([0, 1].map(() => openStore({ engine: 'postgres', url })));
    cleanups.push(() => Promise.all(stores.map((s) => s.close())));
    const [storeA, storeB] = stores as [Store, Store];
    // B's database is far away: 150 ms each way on every call.
    const far = new Proxy(storeB, {
      get(target, name) {
        const value = Reflect.get(target, name) as unknown;
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          await new Promise((resolve) => setTimeout(resolve, 150));
          const result = await (value as (...a: unknown[]) => unknown).apply(target, args);
          await new Promise((resolve) => setTimeout(resolve, 150));
          return result;
        };
      },
    });
    let step = 0;
    const clockB = new StoreClock(far, () => Date.now() + step);
    const sweeperB = new LeaseKeeper({ store: far, leaseTimeMs: 2000, clock: clockB });
    await sweeperB.sweep();

    const { key, accountId } = await storeA.createAccountWithKey({ plan: 'pro', credits: 5 });
    const engineA = testEngine({ kind: 'gated' });
    const a = await serve(storeA, engineA);
    const running = a.handleRemoveRequest(request(key, 'order-1'));
    await engineA.started(1);

    // B's clock steps a minute ahead; its next sweep measures again, over a round trip as slow as ever.
    step = 60_000;
    const report = await sweeperB.sweep();
    expect(report.expiredLeases).toBe(0);
    expect(Math.abs(clockB.now() - Date.now())).toBeLessThan(1000);
    engineA.release();
    const outcome = await running;
    expect([outcome.creditsCharged, outcome.replayed]).toEqual([1, false]);
    expect(await storeA.balance(accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });
    expect(await pgRows(url, "SELECT kind FROM credit_ledger WHERE kind = 'refund'")).toEqual([]);
  });
});
