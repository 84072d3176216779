// A stand-in Engine for billing and idempotency tests, where the model's output does not
// matter: real sharp decodes the input and encodes a real PNG with alpha. Its behaviour can be set to
// fail, to hang, or to wait for a gate, so tests can prove refunds, 504s and a full queue.

import sharp from 'sharp';
import { RmbgError } from '../../src/api/errors.js';
import type { Engine, EngineResult } from '../../src/engine/types.js';
import { imageUrlFetcher } from '../../src/image-url/image-url.js';

/** The confidence every cutout of this engine has, so that a test can see it reach the answer. */
export const TEST_ENGINE_CONFIDENCE = 0.75;

export type Behaviour =
  | { kind: 'work' }
  | { kind: 'fail'; error: unknown }
  /** Never finishes by itself; rejects when its signal aborts (as the real engine does between stages). */
  | { kind: 'hang' }
  /** Works once the test opens the gate, whatever its signal says meanwhile. */
  | { kind: 'gated' };

export interface TestEngine extends Engine {
  behaviour: Behaviour;
  calls: number;
  /** Calls running now, and the most that ever ran at once. */
  running: number;
  maxRunning: number;
  /** Opens the gate for gated calls, now and later. */
  release(): void;
  /** Resolves when `n` calls have started. */
  started(n: number): Promise<void>;
}

export function testEngine(behaviour: Behaviour = { kind: 'work' }): TestEngine {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const waiters: Array<{ n: number; resolve: () => void }> = [];

  async function work(input: Buffer): Promise<EngineResult> {
    let meta: sharp.Metadata;
    try {
      meta = await sharp(input).metadata();
    } catch (error) {
      throw new RmbgError('corrupt_image', 'the image could not be decoded', { cause: error });
    }
    const data = await sharp(input).ensureAlpha().png().toBuffer();
    const width = meta.width ?? 0;
    const height = meta.height ?? 0;
    return {
      data,
      format: 'png',
      mimeType: 'image/png',
      width,
      height,
      foreground: { top: 1, left: 2, width: width - 2, height: height - 1 },
      confidence: TEST_ENGINE_CONFIDENCE,
      timings: {},
    };
  }

  const engine: TestEngine = {
    behaviour,
    calls: 0,
    running: 0,
    maxRunning: 0,
    release() {
      open();
    },
    started(n) {
      if (engine.calls >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    async cutOut(input, _options, signal) {
      // The service hands the engine an upload's bytes; only rmbg's own callers decode photos first.
      if (!Buffer.isBuffer(input)) throw new Error('the service engine double takes bytes only');
      engine.calls += 1;
      engine.running += 1;
      engine.maxRunning = Math.max(engine.maxRunning, engine.running);
      for (const waiter of waiters.filter((w) => engine.calls >= w.n)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      try {
        const current = engine.behaviour;
        switch (current.kind) {
          case 'fail':
            throw current.error;
          case 'hang':
            return await new Promise<never>((_, reject) => {
              signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
            });
          case 'gated':
            await gate;
            return await work(input);
          default:
            return await work(input);
        }
      } finally {
        engine.running -= 1;
      }
    },
    async close() {},
  };
  return engine;
}

export async function testImage(width = 64, height = 48, rgb = { r: 200, g: 30, b: 30 }): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: rgb } })
    .jpeg()
    .toBuffer();
}

/** ServiceDeps for tests: small limits that keep tests quick, overridable per test. */
export const TEST_SERVICE_LIMITS = {
  creditsPerImage: 1,
  rateLimit: 60,
  maxQueue: 4,
  processingTimeoutMs: 5000,
  fetchImage: imageUrlFetcher({ allowPrivate: false }),
  // Generous: the queue tests send more requests of one key at once than the per-key cap of rmbg serve.
  maxInFlightPerKey: 100,
  maxAuthFailures: 30,
  maxUrlFetches: 8,
};

/** The HTTP app's limits for tests (buildApp, startServer): roomy, so that only what a test sets on purpose refuses. */
export const TEST_APP_LIMITS = {
  bodyTimeoutMs: 5000,
  headersTimeoutMs: 5000,
  maxConnections: 100,
  maxConnectionsPerAddress: 100,
  maxUploads: 16,
};
