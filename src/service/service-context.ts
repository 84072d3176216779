// What the use cases share: the store, the engine and its scheduler, the rate limiter, the image-URL
// fetcher, the price, the clock, this instance's lease identity and the observer. Built once by createService.

import type { Engine } from '../engine/types.js';
import type { Store } from '../store/index.js';
import type { AuthThrottle } from './auth-throttle.js';
import type { EngineScheduler } from './engine-scheduler.js';
import type { KeyInFlight } from './key-in-flight.js';
import type { KeyLookups } from './key-lookups.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { RateLimiter } from './rate-limiter.js';
import type { Refunder } from './refunder.js';
import type { Slots } from './slots.js';
import type { ImageFetcher, ServiceObserver } from './types.js';

export interface ServiceContext {
  store: Store;
  engine: Engine;
  scheduler: EngineScheduler;
  limiter: RateLimiter;
  authThrottle: AuthThrottle;
  /** The store's key lookups: capped at once, and the keys valid lately (what a refused address may still use). */
  keyLookups: KeyLookups;
  /** Refunds a request that failed after its charge, retrying when the store refuses. */
  refunder: Refunder;
  inFlight: KeyInFlight;
  /** image_url downloads at once: outside the engine's line, so a slow URL holds no engine place. */
  urlFetches: Slots;
  creditsPerImage: number;
  processingTimeoutMs: number;
  fetchImage: ImageFetcher;
  now: () => number;
  /** This instance's leases: taken for a request's reservation or charge, renewed until its end. */
  leases: Pick<LeaseKeeper, 'lease' | 'end' | 'leaseTimeMs'>;
  observer: ServiceObserver;
  /** Aborted by Service.close(): requests still waiting or running end as interrupted (and are refunded). */
  shutdown: AbortSignal;
}
