// When and how long to wait before another attempt: the one retry rule of the client.
// Exponential backoff with full jitter, Retry-After obeyed, bounded attempts and total time, and no
// blind re-sending of a POST that the server may already have charged (only with an Idempotency-Key).

import { checkWholeNumber } from '../api/whole-number.js';
import { setTimeout as delay } from 'node:timers/promises';
import { isTransient, policyOf, type RmbgError } from '../api/errors.js';
import { LIMITS } from '../api/limits.js';

export interface RetryPolicy {
  /** Attempts in all, the first included. 1 disables retries. */
  maxAttempts: number;
  /** Backoff before retry n (1-based) is random() * min(maxDelayMs, baseDelayMs * 2^(n-1)). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the error is returned so the caller can decide. */
  maxRetryAfterMs: number;
  /**
   * Bound on the whole call, waits and attempts included. Kept under the server's 10-minute idempotent
   * replay window, so every retry of a POST still meets its original Idempotency-Key.
   */
  maxTotalMs: number;
  /**
   * How long to wait for a waitsForFirst error (409 in progress: the first request is running, already charged),
   * instead of maxAttempts; 0 disables the wait.
   */
  maxInProgressWaitMs: number;
  /** Longest backoff between two in-progress checks without Retry-After: the result is usually seconds away. */
  maxInProgressDelayMs: number;
  /** Injectable for tests: the clock, the wait and the jitter source. */
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 20_000,
  maxRetryAfterMs: 120_000,
  maxTotalMs: LIMITS.replayWindowMs - 60_000,
  maxInProgressWaitMs: 5 * 60_000,
  maxInProgressDelayMs: 4_000,
  now: () => Date.now(),
  sleep: (ms, signal) => delay(ms, undefined, { signal }),
  random: Math.random,
};

export function resolveRetryPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...overrides };
  checkWholeNumber('retry.maxAttempts', policy.maxAttempts, 1);
  return policy;
}

/** What the caller is told before each retry (the batch shows it and may slow down). */
export interface RetryInfo {
  /** The attempt that just failed, 1-based. */
  attempt: number;
  maxAttempts: number;
  delayMs: number;
  /** Why another attempt is made, e.g. "HTTP 503 service_busy" or "network error ECONNRESET". */
  reason: string;
  error: RmbgError;
}

export type RetryDecision = { retry: true; delayMs: number; reason: string } | { retry: false; reason: string };

export interface RetryContext {
  /** The attempt that just failed, 1-based. */
  attempt: number;
  elapsedMs: number;
  /** GET, or a POST carrying an Idempotency-Key: repeating it cannot charge twice. */
  repeatable: boolean;
}

/** Why an error is transient (the error table decides), or undefined when it is final. */
function transientReason(error: RmbgError): string | undefined {
  if (!isTransient(error)) return undefined;
  if (error.code === 'network_error') return `network error${networkCause(error)}`;
  if (policyOf(error.code).waitsForFirst)
    return `HTTP ${error.status} ${error.code} (the first request with this key is still running)`;
  return `HTTP ${error.status} ${error.code}`;
}

function networkCause(error: RmbgError): string {
  const cause = error.cause as { code?: unknown } | undefined;
  return typeof cause?.code === 'string' ? ` ${cause.code}` : '';
}

export function decideRetry(error: RmbgError, context: RetryContext, policy: RetryPolicy): RetryDecision {
  const reason = transientReason(error);
  if (reason === undefined) return { retry: false, reason: `HTTP ${error.status} ${error.code} is not retryable` };
  if (!context.repeatable) {
    return {
      retry: false,
      reason: `${reason}; a POST without Idempotency-Key is not repeated, the server may already have charged`,
    };
  }
  const waitingForFirst = policyOf(error.code).waitsForFirst;
  if (waitingForFirst && context.elapsedMs >= policy.maxInProgressWaitMs) {
    return { retry: false, reason: `${reason}; still running after ${policy.maxInProgressWaitMs / 1000} s` };
  }
  if (!waitingForFirst && context.attempt >= policy.maxAttempts)
    return { retry: false, reason: `${reason}; gave up after ${context.attempt} attempts` };

  let delayMs: number;
  if (error.retryAfterSeconds !== undefined) {
    delayMs = Math.ceil(error.retryAfterSeconds * 1000);
    if (delayMs > policy.maxRetryAfterMs) {
      return {
        retry: false,
        reason: `${reason}; Retry-After ${error.retryAfterSeconds} s exceeds the ${policy.maxRetryAfterMs / 1000} s this client waits`,
      };
    }
  } else {
    const cap = waitingForFirst ? Math.min(policy.maxDelayMs, policy.maxInProgressDelayMs) : policy.maxDelayMs;
    const ceiling = Math.min(cap, policy.baseDelayMs * 2 ** (context.attempt - 1));
    delayMs = Math.round(policy.random() * ceiling);
  }
  if (context.elapsedMs + delayMs >= policy.maxTotalMs) {
    return {
      retry: false,
      reason: `${reason}; waiting ${delayMs} ms more would exceed the ${policy.maxTotalMs / 1000} s limit for one call`,
    };
  }
  return { retry: true, delayMs, reason };
}
