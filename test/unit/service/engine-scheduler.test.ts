// The engine scheduler on its own: one job at a time in arrival order, a bounded waiting line, time
// limits that never let two jobs overlap, and cancellation while waiting.

import { describe, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { EngineScheduler } from '../../../src/service/engine-scheduler.js';

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return error instanceof RmbgError ? error.code : String(error);
  }
}

describe('EngineScheduler', () => {
  it('runs as many jobs at once as it has slots (a GPU server), the next when one ends, and bounds the line past them', async () => {
    const scheduler = new EngineScheduler(1, 5000, 3);
    const gates = Array.from({ length: 4 }, () => deferred());
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const job = (index: number) => async () => {
      running += 1;
      most = Math.max(most, running);
      started.push(index);
      await gates[index]!.promise;
      running -= 1;
      return index;
    };
    const results = gates.map((_, index) => scheduler.admit().run(job(index)));
    await Promise.resolve();
    // Three slots and one place in line are taken: a sixth request is refused.
    expect(() => scheduler.admit()).toThrow(expect.objectContaining({ code: 'service_busy' }));
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2]);
    gates[1]!.resolve();
    expect(await results[1]).toBe(1);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2, 3]);
    for (const gate of gates) gate.resolve();
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3]);
    expect(most).toBe(3);
    expect(scheduler.admitted).toBe(0);
  });

  it('runs jobs one at a time, first come first served', async () => {
    const scheduler = new EngineScheduler(5, 5000);
    const order: string[] = [];
    let running = 0;
    const job = (name: string) => async () => {
      running += 1;
      expect(running).toBe(1);
      order.push(`start ${name}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
      order.push(`end ${name}`);
      running -= 1;
      return name;
    };
    const results = await Promise.all(['a', 'b', 'c'].map((name) => scheduler.admit().run(job(name))));
    expect(results).toEqual(['a', 'b', 'c']);
    expect(order).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
    expect(scheduler.admitted).toBe(0);
  });

  it('admits one running and maxQueue waiting; the next gets 503 service_busy until a place is given back', async () => {
    const scheduler = new EngineScheduler(1, 5000);
    const gate = deferred();
    const first = scheduler.admit();
    const second = scheduler.admit();
    const busy = (() => {
      try {
        scheduler.admit();
        return undefined;
      } catch (error) {
        return error as RmbgError;
      }
    })();
    expect([busy?.status, busy?.code]).toEqual([503, 'service_busy']);
    expect(busy?.retryAfterSeconds).toBeGreaterThanOrEqual(1);

    second.release();
    second.release();
    const third = scheduler.admit();
    expect(scheduler.admitted).toBe(2);
    const running = first.run(() => gate.promise.then(() => 'first'));
    const queued = third.run(async () => 'third');
    gate.resolve();
    expect(await Promise.all([running, queued])).toEqual(['first', 'third']);
    third.release();
    expect(scheduler.admitted).toBe(0);
  });

  it('a job over its time limit fails with 504, yet keeps the engine until it really stops', async () => {
    const scheduler = new EngineScheduler(2, 50);
    const stuck = deferred<string>();
    let abortedWith: unknown;
    const slow = scheduler.admit().run((signal) => {
      signal.addEventListener('abort', () => (abortedWith = signal.reason));
      return stuck.promise; // ignores the abort, as a native call might
    });
    let nextStarted = false;
    const after = scheduler.admit().run(async () => {
      nextStarted = true;
      return 'next';
    });

    expect(await codeOf(slow)).toBe('processing_timeout');
    expect((abortedWith as RmbgError).code).toBe('processing_timeout');
    // The one behind it waited out its own limit without ever starting: jobs never overlap.
    expect(await codeOf(after)).toBe('processing_timeout');
    expect(nextStarted).toBe(false);
    expect(scheduler.admitted).toBe(1);
    const freed = scheduler.admit().run(async () => 'freed');
    stuck.resolve('late');
    expect(await freed).toBe('freed');
    expect(scheduler.admitted).toBe(0);
  });

  it('the time limit counts the wait for the engine: a job behind a stuck one gets 504 when its limit is up, not when the engine frees', async () => {
    const short = new EngineScheduler(4, 100);
    const stuckShort = deferred<string>();
    const holding = codeOf(short.admit().run(() => stuckShort.promise));
    let started = false;
    const waiting = short.admit().run(async () => {
      started = true;
      return 'ran';
    });
    const failure = await waiting.then(
      () => undefined,
      (error: unknown) => error as RmbgError,
    );
    expect(failure).toMatchObject({
      code: 'processing_timeout',
      message: expect.stringMatching(/waited 0\.1 s for the model/),
    });
    expect(started).toBe(false);
    // Its place in line is given back: only the stuck job is still admitted.
    expect(short.admitted).toBe(1);
    expect(await holding).toBe('processing_timeout');
    stuckShort.resolve('late');
  });

  it('a request cancelled while waiting leaves the line with interrupted and frees its place', async () => {
    const scheduler = new EngineScheduler(1, 5000);
    const gate = deferred();
    const running = scheduler.admit().run(() => gate.promise);
    const controller = new AbortController();
    const waiting = scheduler.admit().run(async () => 'never', controller.signal);
    controller.abort();
    expect(await codeOf(waiting)).toBe('interrupted');
    expect(scheduler.admitted).toBe(1);
    gate.resolve();
    await running;
    expect(scheduler.admitted).toBe(0);
  });
});
