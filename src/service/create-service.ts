// The local API service's wiring: its parts (store, engine scheduler, limits, refunder, lease keeper) and
// timers (replay purge, lease renewal, the sweep of expired leases), its readiness and its close. Each
// request's steps are its use case's: remove-background.ts, get-account.ts.

import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { RmbgError, messageOf } from '../api/errors.js';
import type { Engine } from '../engine/types.js';
import { SERVER_SETTINGS } from '../settings/server.js';
import { defaultsOf, settingsFor, type SettingsFor } from '../settings/setting.js';
import type { Store } from '../store/index.js';
import { AuthThrottle } from './auth-throttle.js';
import { EngineScheduler } from './engine-scheduler.js';
import { KeyInFlight } from './key-in-flight.js';
import { KeyLookups } from './key-lookups.js';
import { LeaseKeeper } from './lease-keeper.js';
import { getAccount } from './get-account.js';
import { RateLimiter } from './rate-limiter.js';
import { removeBackground } from './remove-background.js';
import { Refunder } from './refunder.js';
import { Slots } from './slots.js';
import { ValidKeys } from './valid-keys.js';
import { StoreClock } from './store-clock.js';
import type { ServiceContext } from './service-context.js';
import type {
  AccountOutcome,
  DeferredRemoveRequest,
  ImageFetcher,
  RemoveOutcome,
  RemoveRequest,
  ServiceObserver,
} from './types.js';

/**
 * How often replay payloads past their window, idempotency records past the key retention and old usage records
 * are deleted (a replay is also refused by age, purged or not).
 */
const PURGE_INTERVAL_MS = 60_000;

/**
 * The service's rows of src/settings (`to: 'service'`: price, rate limit, queue, timeouts, caps, lease time), by
 * the rows' names and meanings, seconds as milliseconds; checked against the rows' bounds by createServer().
 */
export type ServiceSettings = SettingsFor<typeof SERVER_SETTINGS, 'service'>;

/** The rows' defaults, for a caller that gives fewer (tests); createServer() gives every one. */
const SERVICE_DEFAULTS = settingsFor(SERVER_SETTINGS, 'service', defaultsOf(SERVER_SETTINGS));

export interface ServiceDeps extends Partial<ServiceSettings> {
  /** Owned by the caller, who closes it after Service.close(). */
  store: Store;
  /** Owned by the caller, like the store. */
  engine: Engine;
  /** Fetches image_url sources (its address policy is the fetcher's business). */
  fetchImage: ImageFetcher;
  /**
   * This service is the store's only server (a SQLite data directory under its pid lock): at start it settles
   * every lease left behind at once, instead of waiting for them to expire.
   */
  soleServer?: boolean;
  observer?: ServiceObserver;
  /** This server's clock (default Date.now); on PostgreSQL the service corrects it to the database's. */
  now?: () => number;
}

/** What /readyz and /metrics read. */
export interface ServiceStatus {
  /** Requests admitted to the engine's line: the one running plus those waiting. */
  queued: number;
  /** Requests being handled (any endpoint, any stage). */
  inFlight: number;
}

export interface Service {
  /**
   * A deferred request's body is read only after authentication, the rate limit and the key's in-flight
   * cap passed: a refused caller costs no body read.
   */
  handleRemoveRequest(req: RemoveRequest | DeferredRemoveRequest): Promise<RemoveOutcome>;
  /** requestId: the transport's X-Request-ID, for the usage record (one is made up when absent). */
  getAccount(apiKey: string | undefined, requestId?: string, clientAddress?: string): Promise<AccountOutcome>;
  /** Resolves when the store answers at the schema this rmbg expects; rejects with the reason otherwise. */
  checkReady(): Promise<void>;
  status(): ServiceStatus;
  /** The settings in force, as its parts hold them (a row that reaches no part is missing here). */
  settings(): ServiceSettings;
  /** Stops the timers, refuses new requests, cancels waiting ones and waits for those in flight. */
  close(): Promise<void>;
}

/**
 * Images processed at once: one on the CPU (the model already takes every core, and a request then waits
 * behind one other at most), on the GPU as many as keep it busy (its device report says how many).
 */
function engineSlots(engine: Engine): number {
  return engine.device?.device === 'gpu' ? engine.device.concurrency : 1;
}

export async function createService(deps: ServiceDeps): Promise<Service> {
  const settings: ServiceSettings = { ...SERVICE_DEFAULTS, ...deps };
  const shutdown = new AbortController();
  // Every request in flight listens for shutdown; more than the default 10 is normal, not a leak.
  setMaxListeners(0, shutdown.signal);
  // Loaded before the first request, so a valid key from a throttled address is known from the start.
  const validKeys = new ValidKeys(deps.store);
  await validKeys.start();
  const ctx = serviceContext(deps, settings, validKeys, shutdown.signal);
  // Requests left unsettled by an instance that died (a crash, a kill) are refunded and their keys failed:
  // now if their leases expired (or this is the store's only server), later by the sweep otherwise.
  await ctx.leases.sweep(deps.soleServer === true);
  ctx.leases.start();
  const purges = startPurges(deps.store, ctx.now);
  const requests = new RequestTracker(shutdown.signal);

  return {
    handleRemoveRequest: (req) => requests.admit(() => removeBackground(ctx, req)),
    getAccount: (apiKey, requestId = randomUUID(), clientAddress) =>
      requests.admit(() => getAccount(ctx, apiKey, requestId, clientAddress)),
    checkReady: () => checkReady(deps),
    status: () => ({ queued: ctx.scheduler.admitted, inFlight: requests.size }),
    settings: () => settingsOf(ctx),
    async close() {
      purges.stop();
      validKeys.stop();
      ctx.leases.stop();
      shutdown.abort(new RmbgError('interrupted', 'the service is shutting down'));
      await requests.settled();
      // The caller closes the store next: let a purge still running finish its current batches first.
      await purges.running();
      // A last chance for refunds the store refused. Each still unpaid keeps its lease, which this server no longer
      // renews: the sweep of any server (this one's next start, on SQLite) refunds it once it expires.
      await ctx.refunder.retryPending();
      ctx.refunder.stop();
    },
  };
}

/** The service's parts, from its settings: what every use case is given. */
function serviceContext(
  deps: ServiceDeps,
  settings: ServiceSettings,
  validKeys: ValidKeys,
  shutdown: AbortSignal,
): ServiceContext & { leases: LeaseKeeper } {
  // deps.now is this server's clock; the service reads time on the database's (measured at each sweep).
  const clock = new StoreClock(deps.store, deps.now ?? Date.now);
  const now = () => clock.now();
  const observer = deps.observer ?? {};
  return {
    store: deps.store,
    engine: deps.engine,
    scheduler: new EngineScheduler(settings.maxQueue, settings.processingTimeoutMs, engineSlots(deps.engine)),
    limiter: new RateLimiter(settings.rateLimit, deps.store),
    authThrottle: new AuthThrottle(settings.maxAuthFailures),
    keyLookups: new KeyLookups(deps.store, validKeys),
    refunder: new Refunder(deps.store, now),
    inFlight: new KeyInFlight(settings.maxInFlightPerKey),
    urlFetches: new Slots(settings.maxUrlFetches),
    creditsPerImage: settings.creditsPerImage,
    processingTimeoutMs: settings.processingTimeoutMs,
    fetchImage: deps.fetchImage,
    now,
    leases: new LeaseKeeper({
      store: deps.store,
      leaseTimeMs: settings.leaseTimeMs,
      clock,
      onExpired: (report) => observer.leasesExpired?.(report.expiredLeases),
      onError: (what, error) => process.emitWarning(`${what} failed: ${messageOf(error)}`),
    }),
    observer,
    shutdown,
  };
}

/** Deletes what is past its keeping (purgeExpired) now and every PURGE_INTERVAL_MS, one purge at a time: a large
 * backlog may outlast the interval (each run deletes a bounded number of batches). */
function startPurges(store: Store, now: () => number): { stop(): void; running(): Promise<void> | undefined } {
  let purging: Promise<void> | undefined;
  const purge = () =>
    (purging ??= store
      .purgeExpired(now())
      .then(
        () => undefined,
        (error: unknown) =>
          process.emitWarning(
            `purge of expired replays, idempotency records and usage records failed: ${messageOf(error)}`,
          ),
      )
      .finally(() => (purging = undefined)));
  // Not awaited: the first start against a large store would otherwise delete its whole backlog before listening.
  void purge();
  const timer = setInterval(() => void purge(), PURGE_INTERVAL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer), running: () => purging };
}

/** The requests being handled: each admitted while the service is open and tracked until it ends, so close()
 * waits for them. */
class RequestTracker {
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(private readonly shutdown: AbortSignal) {}

  get size(): number {
    return this.#inFlight.size;
  }

  /** A request's steps while the service is open (503 once it is shutting down), tracked until they end. */
  admit<T>(steps: () => Promise<T>): Promise<T> {
    const promise = (async () => {
      if (this.shutdown.aborted)
        throw new RmbgError('service_unavailable', 'the service is shutting down; retry shortly', {
          retryAfterSeconds: 5,
        });
      return steps();
    })();
    this.#inFlight.add(promise);
    const forget = () => this.#inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  /** Resolves once every request in flight has ended, however. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }
}

/** Ready: the model answers and the store is at the schema this rmbg expects; else 503 with the reason. */
async function checkReady(deps: ServiceDeps): Promise<void> {
  const broken = deps.engine.broken?.();
  if (broken !== undefined)
    throw new RmbgError('service_unavailable', `the model is not answering: ${broken}`, { retryAfterSeconds: 5 });
  const version = await deps.store.schemaVersion();
  if (version !== deps.store.latestSchemaVersion) {
    throw new RmbgError(
      'service_unavailable',
      `the store is at schema ${version}, this server needs ${deps.store.latestSchemaVersion}`,
      { retryAfterSeconds: 5 },
    );
  }
}

/** The settings in force, read from the parts that hold them. */
function settingsOf(ctx: ServiceContext): ServiceSettings {
  return {
    creditsPerImage: ctx.creditsPerImage,
    rateLimit: ctx.limiter.limitPerMinute,
    maxQueue: ctx.scheduler.maxQueue,
    processingTimeoutMs: ctx.scheduler.timeoutMs,
    maxInFlightPerKey: ctx.inFlight.maxPerKey,
    maxAuthFailures: ctx.authThrottle.maxFailuresPerMinute,
    maxUrlFetches: ctx.urlFetches.size,
    leaseTimeMs: ctx.leases.leaseTimeMs,
  };
}
