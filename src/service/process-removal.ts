// One removal after authentication and rate limiting: idempotency, image fetch, engine place, charge, engine,
// then delivered (with the key's replay) or, on a failure after the charge, refunded (src/service/refunder.ts).
// Every store call waits within the request's database budget (answer-bound.ts): past it the client gets 503 and
// what the call leaves unsettled is settled by the refunder's background rounds or the lease sweep.

import { RmbgError, toRmbgError } from '../api/errors.js';
import { LIMIT_TEXT, LIMITS } from '../api/limits.js';
import { validateIdempotencyKey } from '../api/options.js';
import type { Balance, IdempotencyBegin, IdempotencyRef, KeyOwner, UsageRecord } from '../store/index.js';
import type { DatabaseBudget } from './answer-bound.js';
import type { SchedulerTicket } from './engine-scheduler.js';
import { fromStoredReplay, toStoredReplay } from './replay-record.js';
import { requestFingerprint } from './request-fingerprint.js';
import type { ServiceContext } from './service-context.js';
import type { ImageSource } from '../api/request-parsing.js';
import type { RateLimitInfo } from '../api/wire-types.js';
import type { ProcessedImage, RemoveOutcome, RemoveRequest } from './types.js';

/** Retry-After of a 409 in progress: about one image's processing time, so a client asks again when it may be done. */
const IN_PROGRESS_RETRY_SECONDS = 2;
/** Retry-After when every image_url download place is taken: downloads take seconds, not minutes. */
const URL_POOL_RETRY_SECONDS = 2;

function conflict(begun: Exclude<IdempotencyBegin, { state: 'new' | 'succeeded' }>, key: string): RmbgError {
  const original = `request ${begun.requestId}`;
  switch (begun.state) {
    case 'in_progress':
      return new RmbgError(
        'idempotency_in_progress',
        `Idempotency-Key '${key}' belongs to ${original}, which is still running; repeat this request when it has finished to receive its result`,
        {
          retryAfterSeconds: IN_PROGRESS_RETRY_SECONDS,
        },
      );
    case 'mismatch':
      return new RmbgError(
        'idempotency_key_mismatch',
        `Idempotency-Key '${key}' was used by ${original} with a different image or different options; use a new key for a different request`,
      );
    case 'expired':
      return new RmbgError(
        'idempotency_key_expired',
        `Idempotency-Key '${key}' belongs to ${original}, which succeeded more than ${LIMIT_TEXT.replayWindow} ago and can no longer be replayed; use a new key for a new billable request`,
      );
    case 'failed':
      return new RmbgError(
        'idempotency_key_failed',
        `Idempotency-Key '${key}' belongs to ${original}, which failed and was refunded; use a new key to try again`,
      );
  }
}

async function loadImage(ctx: ServiceContext, source: ImageSource, signal: AbortSignal): Promise<Buffer> {
  if (source.kind !== 'url') return source.data;
  const release = ctx.urlFetches.tryTake();
  if (!release) {
    throw new RmbgError(
      'service_busy',
      `${ctx.urlFetches.size} image_url downloads are in progress (the most at once); retry shortly`,
      {
        retryAfterSeconds: URL_POOL_RETRY_SECONDS,
      },
    );
  }
  try {
    return await ctx.fetchImage(source.url, {
      timeoutMs: Math.min(LIMITS.imageUrlTimeoutMs, ctx.processingTimeoutMs),
      maxBytes: LIMITS.maxImageBytes,
      signal,
    });
  } finally {
    release();
  }
}

function insufficientCredits(price: number, balance: Balance): RmbgError {
  const { total, subscription, payg } = balance;
  return new RmbgError(
    'insufficient_credits',
    `an image costs ${price} credit${price === 1 ? '' : 's'} and the balance is ${total} (subscription ${subscription}, payg ${payg})`,
  );
}

/** Before a download: a caller who could not pay for the image gets 402 without making us fetch it. */
async function assertCanPay(
  ctx: ServiceContext,
  caller: KeyOwner,
  price: number,
  budget: DatabaseBudget,
): Promise<void> {
  const balance = await budget.bound(ctx.store.balance(caller.accountId));
  if (balance.total < price) throw insufficientCredits(price, balance);
}

export async function processRemoval(
  ctx: ServiceContext,
  req: RemoveRequest,
  caller: KeyOwner,
  rateLimit: RateLimitInfo,
  usage: UsageRecord,
  budget: DatabaseBudget,
): Promise<RemoveOutcome> {
  const price = ctx.creditsPerImage;
  let idempotency: IdempotencyRef | undefined;
  if (req.idempotencyKey !== undefined) {
    const key = validateIdempotencyKey(req.idempotencyKey);
    const fingerprint = requestFingerprint(req.source, req.options);
    const begun = await budget
      .bound(ctx.store.beginIdempotent(caller.accountId, key, fingerprint, ctx.leases.lease(req.requestId), ctx.now()))
      .catch((error: unknown) => {
        ctx.leases.end(req.requestId);
        throw error;
      });
    // The lease stays held (renewed) only when the key was reserved for this request; the finally below ends it.
    if (begun.state !== 'new') ctx.leases.end(req.requestId);
    if (begun.state === 'succeeded') {
      const { image, creditsCharged } = fromStoredReplay(begun.replay);
      usage.replayed = true;
      describeResult(usage, image);
      return { image, creditsCharged, requestId: begun.requestId, replayed: true, rateLimit };
    }
    if (begun.state !== 'new') throw conflict(begun, key);
    idempotency = { accountId: caller.accountId, key, requestId: req.requestId };
  }

  // A caller with an Idempotency-Key collects the result by repeating the request, so its request runs
  // to the end even when the connection drops; without a key, nobody could receive it: stop and refund.
  const signal = idempotency || !req.signal ? ctx.shutdown : AbortSignal.any([req.signal, ctx.shutdown]);
  let ticket: SchedulerTicket | undefined;
  let charged = false;
  /** The result, once its delivery was tried: a settlement lost on the way may turn out delivered after all. */
  let delivering: ProcessedImage | undefined;
  const answer = (image: ProcessedImage): RemoveOutcome => {
    usage.credits = price;
    describeResult(usage, image);
    return { image, creditsCharged: price, requestId: req.requestId, replayed: false, rateLimit };
  };
  try {
    // An image_url is downloaded before the request takes an engine place (a slow URL must not hold one),
    // in its own bounded pool, and before the charge, so a refusal afterwards charges nothing.
    if (req.source.kind === 'url') await assertCanPay(ctx, caller, price, budget);
    const input = await loadImage(ctx, req.source, signal);
    if (req.source.kind === 'url') usage.inputBytes = input.length;
    ticket = ctx.scheduler.admit();
    // Until the store answers, the charge may have been committed (an answer lost with the connection): a
    // failure then refunds whatever was charged instead of giving the key back.
    charged = true;
    const charge = await budget.bound(
      ctx.store.charge(caller.accountId, price, ctx.leases.lease(req.requestId), ctx.now()),
    );
    charged = charge.ok;
    if (!charge.ok) throw insufficientCredits(price, charge.balance);
    ctx.observer.charged?.(price);
    const result = await ticket.run(async (engineSignal) => {
      const started = performance.now();
      try {
        return await ctx.engine.cutOut(input, req.options, engineSignal);
      } catch (error) {
        throw toRmbgError(error, 'processing_failed');
      } finally {
        ctx.observer.inference?.((performance.now() - started) / 1000);
      }
    }, signal);
    const image: ProcessedImage = {
      data: result.data,
      format: result.format,
      mimeType: result.mimeType,
      width: result.width,
      height: result.height,
      foreground: result.foreground,
      confidence: result.confidence,
    };
    // The settlement: delivered, with the key's replay, in one transaction. It fails only when this request's
    // lease expired and another instance refunded it meanwhile; then the result is not handed out for free.
    delivering = image;
    const delivered = await budget.bound(
      ctx.store.deliver(
        req.requestId,
        idempotency && { ref: idempotency, replay: toStoredReplay(image, price) },
        ctx.now(),
      ),
    );
    if (!delivered) {
      throw new RmbgError(
        'service_unavailable',
        `request ${req.requestId} outlived its lease and was refunded by another server; send it again`,
        { retryAfterSeconds: 1 },
      );
    }
    return answer(image);
  } catch (error) {
    const failure =
      signal.aborted && !isTimeout(error)
        ? new RmbgError(
            'interrupted',
            'the request was cancelled before its image was processed; any credits charged for it were refunded',
            { cause: error },
          )
        : toRmbgError(error);
    // Nothing was charged (queue full, too few credits): the key is given back, so the same request may be repeated.
    if (charged && delivering) {
      // The result is held and its settlement may be unknown (the deliver's answer lost): settle for certain.
      const settled = await settleHeldResult(ctx, req.requestId, idempotency, budget);
      if (settled === 'delivered') return answer(delivering);
      // Unknown past the lease time: the client gets the error. Without a key nobody can collect the result,
      // so a delivery whose COMMIT landed unseen is refunded too, once the database answers.
      if (settled === 'unknown') await refund(ctx, req.requestId, idempotency, budget, !idempotency);
    } else if (charged) {
      await refund(ctx, req.requestId, idempotency, budget);
    } else if (idempotency) {
      await budget.bound(ctx.store.releaseIdempotent(idempotency));
    }
    throw failure;
  } finally {
    ticket?.release();
    ctx.leases.end(req.requestId);
  }
}

/** The refund of a failure after the charge: at once, within the budget, else from the background (refunder.ts). */
async function refund(
  ctx: ServiceContext,
  requestId: string,
  idempotency: IdempotencyRef | undefined,
  budget: DatabaseBudget,
  unreceived = false,
): Promise<void> {
  const outcome = await ctx.refunder.refund(requestId, idempotency, unreceived, budget);
  if (outcome?.settled) ctx.observer.refunded?.(outcome.refunded.subscription + outcome.refunded.payg);
}

/** The longest wait between two reads of a held result's settlement: the database is usually back within it. */
const MAX_REREAD_WAIT_MS = 1000;

/**
 * What became of a request whose result is held while its settlement is unknown (the deliver's answer lost with
 * its connection, or the database away): read again until it is known, bounded by the lease time and by the
 * request's database budget (past them, the refunder or the sweep of any server settles it). Still leased means
 * the deliver did not commit: refunded here, for certain, before the caller is answered. 'unknown' once a bound
 * is reached.
 */
async function settleHeldResult(
  ctx: ServiceContext,
  requestId: string,
  idempotency: IdempotencyRef | undefined,
  budget: DatabaseBudget,
): Promise<'delivered' | 'refunded' | 'unknown'> {
  const deadline = performance.now() + Math.min(ctx.leases.leaseTimeMs, budget.remainingMs());
  for (let wait = 50; ; wait = Math.min(wait * 2, MAX_REREAD_WAIT_MS)) {
    const state = await budget.bound(ctx.store.settlementOf(requestId)).catch(() => undefined);
    if (state === 'delivered' || state === 'refunded') return state;
    if (state === 'leased') {
      const outcome = await budget.bound(ctx.store.refund(requestId, idempotency, ctx.now())).catch(() => undefined);
      if (outcome?.settled) {
        ctx.observer.refunded?.(outcome.refunded.subscription + outcome.refunded.payg);
        return 'refunded';
      }
      // Closed meanwhile: the lost COMMIT was still being applied. Read what it did, at once.
      if (outcome) continue;
    }
    if (performance.now() + wait > deadline) return 'unknown';
    if (
      !(await budget.pause(wait).then(
        () => true,
        () => false,
      ))
    )
      return 'unknown';
  }
}

function isTimeout(error: unknown): boolean {
  return error instanceof RmbgError && error.code === 'processing_timeout';
}

function describeResult(usage: UsageRecord, image: ProcessedImage): void {
  usage.format = image.format;
  usage.width = image.width;
  usage.height = image.height;
}
