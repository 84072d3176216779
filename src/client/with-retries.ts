// Runs one HTTP call as a series of attempts under the retry policy: the only retry loop in rmbg.
// Callers describe the attempt; this layer waits, reports each retry and gives up within the bounds.

import { policyOf, RmbgError, toRmbgError } from '../api/errors.js';
import { decideRetry, type RetryInfo, type RetryPolicy } from './retry-policy.js';

export interface RetryRun {
  policy: RetryPolicy;
  /** GET, or a POST carrying an Idempotency-Key. */
  repeatable: boolean;
  onRetry?: ((info: RetryInfo) => void) | undefined;
  /** The caller's cancellation: stops waiting and attempting at once. */
  signal?: AbortSignal | undefined;
  /**
   * For a needsNewKey error: sets up a fresh Idempotency-Key and resolves true, or false to give up. A fresh key
   * starts a new call (attempts and time from zero: its replay window is new).
   */
  renewKey?: ((error: RmbgError) => Promise<boolean>) | undefined;
}

/**
 * `attempt` gets the attempt number and the milliseconds left of the total bound (so one slow attempt
 * cannot outlast it) and throws RmbgError for failures; anything else thrown is wrapped as internal_error.
 */
export async function withRetries<T>(
  attempt: (n: number, remainingMs: number) => Promise<T>,
  run: RetryRun,
): Promise<T> {
  const { policy } = run;
  let started = policy.now();
  // Answers "in progress" so far (codes whose row says waitsForFirst: 409 idempotency_in_progress). Waiting
  // for the first request is bounded by time, not attempts, so they do not use up the attempts left for
  // failures (a dropped connection after four of them would otherwise end the call).
  let inProgressAnswers = 0;
  for (let n = 1; ; n++) {
    throwIfInterrupted(run.signal);
    try {
      return await attempt(n, Math.max(1, policy.maxTotalMs - (policy.now() - started)));
    } catch (thrown) {
      throwIfInterrupted(run.signal);
      const error = toRmbgError(thrown);
      if (policyOf(error.code).needsNewKey && run.renewKey && (await run.renewKey(error))) {
        n = 0;
        inProgressAnswers = 0;
        started = policy.now();
        continue;
      }
      const waitingForFirst = policyOf(error.code).waitsForFirst;
      const attempt = waitingForFirst ? n : n - inProgressAnswers;
      if (waitingForFirst) inProgressAnswers += 1;
      const decision = decideRetry(
        error,
        { attempt, elapsedMs: policy.now() - started, repeatable: run.repeatable },
        policy,
      );
      if (!decision.retry) throw n > 1 ? withAttemptCount(error, n) : error;
      run.onRetry?.({
        attempt: n,
        maxAttempts: policy.maxAttempts,
        delayMs: decision.delayMs,
        reason: decision.reason,
        error,
      });
      try {
        await policy.sleep(decision.delayMs, run.signal);
      } catch (sleepError) {
        throwIfInterrupted(run.signal);
        throw sleepError;
      }
    }
  }
}

function throwIfInterrupted(signal: AbortSignal | undefined): void {
  if (signal?.aborted)
    throw new RmbgError('interrupted', 'the request was cancelled before it completed', { cause: signal.reason });
}

/** The final error keeps code, status, Retry-After and rate limit; its message says retries were made. */
function withAttemptCount(error: RmbgError, attempts: number): RmbgError {
  return error.with({ message: `${error.message} (after ${attempts} attempts)` });
}
