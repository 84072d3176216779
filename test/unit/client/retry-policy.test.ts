// The retry rule on its own: which failures are retried, how long the waits are, and the bounds.
import { describe, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { parseRetryAfter } from '../../../src/client/retry-after.js';
import { decideRetry, resolveRetryPolicy } from '../../../src/client/retry-policy.js';

const policy = resolveRetryPolicy({
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 3000,
  maxRetryAfterMs: 60_000,
  maxTotalMs: 100_000,
  random: () => 1,
});
const ctx = { attempt: 1, elapsedMs: 0, repeatable: true };

function httpError(
  status: number,
  code: ConstructorParameters<typeof RmbgError>[0] = 'upstream_error',
  retryAfterSeconds?: number,
) {
  return new RmbgError(code, 'x', { status, retryAfterSeconds });
}

describe('decideRetry', () => {
  it.each([500, 502, 503, 504, 429, 408])('retries HTTP %i', (status) => {
    expect(decideRetry(httpError(status), ctx, policy).retry).toBe(true);
  });

  it.each([
    [400, 'invalid_option'],
    [402, 'insufficient_credits'],
    [403, 'invalid_api_key'],
    [404, 'not_found'],
    [409, 'idempotency_key_expired'],
    [409, 'idempotency_key_failed'],
    [409, 'idempotency_key_mismatch'],
    [415, 'unsupported_content_type'],
    [200, 'upstream_error'],
  ] as const)('does not retry HTTP %i %s', (status, code) => {
    expect(decideRetry(httpError(status, code), ctx, policy)).toMatchObject({ retry: false });
  });

  it('retries 409 idempotency_in_progress and network errors', () => {
    expect(decideRetry(httpError(409, 'idempotency_in_progress'), ctx, policy).retry).toBe(true);
    const network = new RmbgError('network_error', 'reset', {
      cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }),
    });
    expect(decideRetry(network, ctx, policy)).toMatchObject({ retry: true, reason: 'network error ECONNRESET' });
  });

  it('keeps waiting for a request in progress past maxAttempts, bounded by maxInProgressWaitMs', () => {
    const inProgress = httpError(409, 'idempotency_in_progress', 2);
    const bounded = resolveRetryPolicy({ ...policy, maxInProgressWaitMs: 60_000 });
    expect(decideRetry(inProgress, { ...ctx, attempt: 12, elapsedMs: 30_000 }, bounded)).toMatchObject({
      retry: true,
      delayMs: 2000,
    });
    expect(decideRetry(inProgress, { ...ctx, attempt: 12, elapsedMs: 60_000 }, bounded)).toMatchObject({
      retry: false,
    });
    // Other transient errors still stop at maxAttempts.
    expect(
      decideRetry(httpError(503, 'service_busy', 2), { ...ctx, attempt: 5, elapsedMs: 30_000 }, bounded),
    ).toMatchObject({ retry: false });
  });

  it('never repeats a call that is not repeatable (a POST without Idempotency-Key)', () => {
    const decision = decideRetry(httpError(503, 'service_busy', 1), { ...ctx, repeatable: false }, policy);
    expect(decision).toMatchObject({ retry: false });
    expect(decision.reason).toMatch(/without Idempotency-Key/);
  });

  it('backs off exponentially with full jitter, capped per wait', () => {
    const delays = (random: number) =>
      [1, 2, 3, 4].map((attempt) => {
        const d = decideRetry(httpError(500), { ...ctx, attempt }, { ...policy, random: () => random });
        return d.retry ? d.delayMs : -1;
      });
    expect(delays(1)).toEqual([500, 1000, 2000, 3000]);
    expect(delays(0.5)).toEqual([250, 500, 1000, 1500]);
    expect(delays(0)).toEqual([0, 0, 0, 0]);
  });

  it('obeys Retry-After instead of the backoff, and gives up when it exceeds the cap', () => {
    expect(decideRetry(httpError(429, 'rate_limited', 7), ctx, policy)).toMatchObject({ retry: true, delayMs: 7000 });
    expect(decideRetry(httpError(503, 'service_busy', 0.25), ctx, policy)).toMatchObject({ retry: true, delayMs: 250 });
    const tooLong = decideRetry(httpError(429, 'rate_limited', 61), ctx, policy);
    expect(tooLong).toMatchObject({ retry: false });
    expect(tooLong.reason).toMatch(/Retry-After 61 s exceeds/);
  });

  it('stops at the attempt bound and at the total-time bound', () => {
    expect(decideRetry(httpError(500), { ...ctx, attempt: 5 }, policy)).toMatchObject({ retry: false });
    expect(decideRetry(httpError(500), { ...ctx, attempt: 4 }, policy).retry).toBe(true);
    expect(decideRetry(httpError(429, 'rate_limited', 5), { ...ctx, elapsedMs: 95_000 }, policy)).toMatchObject({
      retry: false,
    });
    expect(decideRetry(httpError(429, 'rate_limited', 5), { ...ctx, elapsedMs: 94_000 }, policy).retry).toBe(true);
  });

  it('rejects a policy without attempts', () => {
    expect(() => resolveRetryPolicy({ maxAttempts: 0 })).toThrow(/maxAttempts must be a whole number from 1; got 0/);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  it('reads delay-seconds and HTTP-dates', () => {
    expect(parseRetryAfter('3', now)).toBe(3);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:05 GMT', now)).toBe(5);
    expect(parseRetryAfter('Mon, 31 Dec 2029 23:00:00 GMT', now)).toBe(0);
  });
  it('ignores absent or unreadable values', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-3', now)).toBeUndefined();
  });
});
