// What the use cases share: the store, the engine and its scheduler, the rate limiter, the image-URL
// fetcher, the price, the clock, this instance's lease identity and the observer. Built once by createService.

import type { BackgroundRemover } from '../engine/types.js';
import type { Store } from '../store/index.js';
import type { EngineScheduler } from './engine-scheduler.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { RateLimiter } from './rate-limiter.js';
import type { ImageFetcher, ServiceObserver } from './types.js';

export interface ServiceContext {
  store: Store;
  engine: BackgroundRemover;
  scheduler: EngineScheduler;
  limiter: RateLimiter;
  creditsPerImage: number;
  processingTimeoutMs: number;
  fetchImage: ImageFetcher;
  now: () => number;
  /** This instance's leases: taken for a request's reservation or charge, renewed until its end. */
  leases: Pick<LeaseKeeper, 'lease' | 'end'>;
  observer: ServiceObserver;
  /** Aborted by Service.close(): requests still waiting or running end as interrupted (and are refunded). */
  shutdown: AbortSignal;
}
