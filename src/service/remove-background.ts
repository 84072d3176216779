// POST /v1.0/removebg, from authentication to the answer, as the named steps `removeBackground` calls in order:
//
//   the frame (request-lifecycle.ts): openRequest, authenticateCaller, takeRateLimit;
//   enterKeyPlace    the key's requests in flight (held until the answer is sent);
//   readBody         the body, read only now through the transport's callback (server/api-routes.ts'
//                    readBodyInPlace), so a refused caller costs no body read;
//   beginIdempotency an Idempotency-Key's replay (replayOf), conflict or reservation;
//   chargeCutOutDeliver:
//     fetchInput     an image_url downloaded (after a check that the caller can pay), or the upload's bytes;
//     ctx.scheduler.admit (an engine place), charge, cutOut (the engine: engine/pipeline.ts), deliver (the result
//                    and its replay settled in one transaction; without a key, the lease held until the answer
//                    was sent, then closed or, the client gone, refunded: settleWhenAnswered);
//     settleFailure  on a failure after the charge, the refund (through the Refunder, refunder.ts), else the key
//                    given back;
//   then requestFailed (the error gets the rate-limit window) and closeRequest (the usage record).
//
// Every store call waits within the request's database budget (answer-bound.ts): past it the client gets 503 and
// what the call leaves unsettled is settled by the refunder's background rounds or the lease sweep.

import { setTimeout as delay } from 'node:timers/promises';
import { RmbgError, toRmbgError } from '../api/errors.js';
import { LIMIT_TEXT, LIMITS } from '../api/limits.js';
import { validateIdempotencyKey } from '../api/options.js';
import type { Balance, IdempotencyBegin, IdempotencyRef, KeyOwner, UsageRecord } from '../store/index.js';
import type { DatabaseBudget } from './answer-bound.js';
import type { SchedulerTicket } from './engine-scheduler.js';
import { fromStoredReplay, toStoredReplay } from './replay-record.js';
import { requestFingerprint } from './request-fingerprint.js';
import {
  authenticateCaller,
  closeRequest,
  openRequest,
  requestFailed,
  takeRateLimit,
  type OpenRequest,
} from './request-lifecycle.js';
import type { ServiceContext } from './service-context.js';
import type { ImageSource } from '../api/request-parsing.js';
import type { RateLimitInfo } from '../api/wire-types.js';
import type { DeferredRemoveRequest, ProcessedImage, RemoveOutcome, RemoveRequest } from './types.js';

/** The removal use case: each line a step, in the order they run. */
export async function removeBackground(
  ctx: ServiceContext,
  req: RemoveRequest | DeferredRemoveRequest,
): Promise<RemoveOutcome> {
  const request = openRequest(ctx, {
    apiKey: req.apiKey,
    requestId: req.requestId,
    endpoint: 'removebg',
    clientAddress: req.clientAddress,
  });
  try {
    const caller = await authenticateCaller(ctx, request);
    const rateLimit = await takeRateLimit(ctx, request, caller);
    const leave = enterKeyPlace(ctx, req, caller, rateLimit);
    try {
      const removal = await readBody(req, caller, request.usage);
      const begun = await beginIdempotency(ctx, removal, caller, request.budget);
      if (begun.replay) return replayOf(begun.replay, rateLimit, request.usage);
      return await chargeCutOutDeliver(ctx, removal, caller, begun.reserved, rateLimit, request);
    } finally {
      leave();
    }
  } catch (error) {
    throw requestFailed(request, error);
  } finally {
    await closeRequest(ctx, request);
  }
}

/** Takes one of the key's places for requests in flight (429 past its cap); the returned function gives it back
 * once the answer is sent, when the transport says when that is (req.answered): a client that never reads would
 * otherwise take free replays without end. */
function enterKeyPlace(
  ctx: ServiceContext,
  req: RemoveRequest | DeferredRemoveRequest,
  caller: KeyOwner,
  rateLimit: RateLimitInfo,
): () => void {
  const leave = ctx.inFlight.enter(caller.keyId, rateLimit);
  return () => {
    if (req.answered) void req.answered.then(leave, leave);
    else leave();
  };
}

/** The request with its body: read now through the transport's callback when it was deferred. */
async function readBody(
  req: RemoveRequest | DeferredRemoveRequest,
  caller: KeyOwner,
  usage: UsageRecord,
): Promise<RemoveRequest> {
  const body = 'readBody' in req ? await req.readBody(caller.keyId) : req;
  usage.size = body.options.size;
  usage.inputBytes = body.source.kind === 'url' ? null : body.source.data.length;
  return { ...req, source: body.source, options: body.options };
}

/** An earlier success of the same Idempotency-Key, answered again at no charge. */
function replayOf(
  { replay, requestId }: Extract<IdempotencyBegin, { state: 'succeeded' }>,
  rateLimit: RateLimitInfo,
  usage: UsageRecord,
): RemoveOutcome {
  const { image, creditsCharged } = fromStoredReplay(replay);
  usage.replayed = true;
  describeResult(usage, image);
  return { image, creditsCharged, requestId, replayed: true, rateLimit };
}

/** The removal itself: the input fetched, an engine place, the charge, the cutout, the delivery; on a failure the
 * charge refunded or the key given back (settleFailure). */
async function chargeCutOutDeliver(
  ctx: ServiceContext,
  req: RemoveRequest,
  caller: KeyOwner,
  idempotency: IdempotencyRef | undefined,
  rateLimit: RateLimitInfo,
  { usage, budget }: OpenRequest,
): Promise<RemoveOutcome> {
  const price = ctx.creditsPerImage;
  const answer = (image: ProcessedImage): RemoveOutcome => {
    usage.credits = price;
    describeResult(usage, image);
    return { image, creditsCharged: price, requestId: req.requestId, replayed: false, rateLimit };
  };
  // A caller with an Idempotency-Key collects the result by repeating the request, so its request runs
  // to the end even when the connection drops; without a key, nobody could receive it: stop and refund.
  const signal = idempotency || !req.signal ? ctx.shutdown : AbortSignal.any([req.signal, ctx.shutdown]);
  let ticket: SchedulerTicket | undefined;
  /** Until the store answers the charge, it may have been committed (an answer lost with the connection). */
  const state: RemovalState = { charged: false };
  try {
    const input = await fetchInput(ctx, req, caller, { price, budget, usage, signal });
    ticket = ctx.scheduler.admit();
    await charge(ctx, req, caller, { price, budget }, state);
    const image = await cutOut(ctx, ticket, input, req, signal);
    // A client without a key that left during the cut-out's last moments: refunded, not charged for nothing.
    if (!idempotency) req.signal?.throwIfAborted();
    // The result, once its delivery is tried: a settlement lost on the way may turn out delivered after all.
    state.delivering = image;
    await deliver(ctx, req, idempotency, image, { price, budget });
    state.awaitsAnswer = !idempotency;
    return answer(image);
  } catch (error) {
    const failure = failureOf(error, signal);
    const settled = await settleFailure(ctx, req.requestId, idempotency, budget, state);
    if (settled === 'delivered' && state.delivering) {
      state.awaitsAnswer = !idempotency;
      return answer(state.delivering);
    }
    throw failure;
  } finally {
    ticket?.release();
    if (state.awaitsAnswer) await settleWhenAnswered(ctx, req);
    else ctx.leases.end(req.requestId);
  }
}

/**
 * A request without an Idempotency-Key, its result delivered with its lease held (holdDelivered): once the answer
 * was sent, the lease is closed (charged); a client gone before that is refunded. Awaited where the transport says
 * nothing of its sending (req.answered), else in the background. Until then the lease is renewed, and a server
 * killed meanwhile leaves it to expire: the sweep of any server refunds the result nobody received.
 */
async function settleWhenAnswered(ctx: ServiceContext, req: RemoveRequest): Promise<void> {
  const settle = async () => {
    try {
      if (req.signal?.aborted) {
        const outcome = await ctx.refunder.refund(req.requestId, undefined, true);
        if (outcome?.settled) ctx.observer.refunded?.(outcome.refunded.subscription + outcome.refunded.payg);
      } else {
        await recordDelivery(ctx, req.requestId);
      }
    } finally {
      ctx.leases.end(req.requestId);
    }
  };
  if (req.answered) void req.answered.then(settle);
  else await settle();
}

/** Pauses between tries to close a delivered lease: within the lease's time, so its renewals keep it ours. */
const DELIVERY_RETRY_MS = [1_000, 2_000, 4_000, 8_000];

/**
 * Closes the lease of a result whose answer was sent (the charge stands), tried again while the database is away
 * (a frozen connection is given up, the next try takes a new one). Never closed, the lease expires and the sweep
 * refunds a result that was received: the server's loss, never the client's.
 */
async function recordDelivery(ctx: ServiceContext, requestId: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await ctx.store.deliver(requestId, undefined, ctx.now()); // false: settled already, by an earlier try
      return;
    } catch (error) {
      const pause = DELIVERY_RETRY_MS[attempt];
      if (pause === undefined) {
        process.emitWarning(`request ${requestId}: its delivery was not recorded (${toRmbgError(error).message})`);
        return;
      }
      await delay(pause, undefined, { ref: false });
    }
  }
}

/** How far a removal got: what a failure must undo. */
interface RemovalState {
  /** The charge may have been committed: a failure refunds it instead of giving the key back. */
  charged: boolean;
  /** The result whose delivery was tried. */
  delivering?: ProcessedImage;
  /** Delivered without an Idempotency-Key: its lease is held until the answer was sent (settleWhenAnswered). */
  awaitsAnswer?: boolean;
}

/** An Idempotency-Key's state: a success to replay, or the key reserved for this request (undefined without a key).
 * A conflict (in progress, another request's, expired, failed) is thrown. */
async function beginIdempotency(
  ctx: ServiceContext,
  req: RemoveRequest,
  caller: KeyOwner,
  budget: DatabaseBudget,
): Promise<{ replay?: Extract<IdempotencyBegin, { state: 'succeeded' }>; reserved?: IdempotencyRef }> {
  if (req.idempotencyKey === undefined) return {};
  const key = validateIdempotencyKey(req.idempotencyKey);
  const fingerprint = requestFingerprint(req.source, req.options);
  const begun = await budget
    .bound(ctx.store.beginIdempotent(caller.accountId, key, fingerprint, ctx.leases.lease(req.requestId), ctx.now()))
    .catch((error: unknown) => {
      ctx.leases.end(req.requestId);
      throw error;
    });
  // The lease stays held (renewed) only when the key was reserved for this request; chargeCutOutDeliver ends it.
  if (begun.state !== 'new') ctx.leases.end(req.requestId);
  if (begun.state === 'succeeded') return { replay: begun };
  if (begun.state !== 'new') throw conflict(begun, key);
  return { reserved: { accountId: caller.accountId, key, requestId: req.requestId } };
}

/** The image's bytes: an image_url is downloaded before the request takes an engine place (a slow URL must not
 * hold one), in its own bounded pool, and before the charge, so a refusal afterwards charges nothing; a caller who
 * could not pay gets 402 without making us fetch it. */
async function fetchInput(
  ctx: ServiceContext,
  req: RemoveRequest,
  caller: KeyOwner,
  { price, budget, usage, signal }: { price: number; budget: DatabaseBudget; usage: UsageRecord; signal: AbortSignal },
): Promise<Buffer> {
  if (req.source.kind === 'url') await assertCanPay(ctx, caller, price, budget);
  const input = await loadImage(ctx, req.source, signal);
  if (req.source.kind === 'url') usage.inputBytes = input.length;
  return input;
}

/** The charge, under this request's lease; 402 when the balance is too low. */
async function charge(
  ctx: ServiceContext,
  req: RemoveRequest,
  caller: KeyOwner,
  { price, budget }: { price: number; budget: DatabaseBudget },
  state: RemovalState,
): Promise<void> {
  state.charged = true;
  const charged = await budget.bound(
    ctx.store.charge(caller.accountId, price, ctx.leases.lease(req.requestId), ctx.now()),
  );
  state.charged = charged.ok;
  if (!charged.ok) throw insufficientCredits(price, charged.balance);
  ctx.observer.charged?.(price);
}

/** The engine's cutout of the image, in the engine place of `ticket` (engine/index.ts cutOut: engine/pipeline.ts). */
async function cutOut(
  ctx: ServiceContext,
  ticket: SchedulerTicket,
  input: Buffer,
  req: RemoveRequest,
  signal: AbortSignal,
): Promise<ProcessedImage> {
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
  return {
    data: result.data,
    format: result.format,
    mimeType: result.mimeType,
    width: result.width,
    height: result.height,
    foreground: result.foreground,
    confidence: result.confidence,
  };
}

/** The settlement: delivered, with the key's replay, in one transaction. It fails only when this request's lease
 * expired and another instance refunded it meanwhile; then the result is not handed out for free. */
async function deliver(
  ctx: ServiceContext,
  req: RemoveRequest,
  idempotency: IdempotencyRef | undefined,
  image: ProcessedImage,
  { price, budget }: { price: number; budget: DatabaseBudget },
): Promise<void> {
  // Without a key the lease is held until the answer was sent: a kill before that must not keep the charge.
  const delivered = await budget.bound(
    idempotency
      ? ctx.store.deliver(req.requestId, { ref: idempotency, replay: toStoredReplay(image, price) }, ctx.now())
      : ctx.store.holdDelivered(req.requestId, ctx.now()),
  );
  if (!delivered) {
    throw new RmbgError(
      'service_unavailable',
      `request ${req.requestId} outlived its lease and was refunded by another server; send it again`,
      { retryAfterSeconds: 1 },
    );
  }
}

/** After a failure: a charge refunded (through the Refunder), or, nothing charged (queue full, too few credits), the
 * key given back so the same request may be repeated. 'delivered' when a held result's settlement, lost on the
 * way, turns out delivered after all: the caller is answered with it. */
async function settleFailure(
  ctx: ServiceContext,
  requestId: string,
  idempotency: IdempotencyRef | undefined,
  budget: DatabaseBudget,
  { charged, delivering }: RemovalState,
): Promise<'delivered' | undefined> {
  if (charged && delivering) {
    // The result is held and its settlement may be unknown (the deliver's answer lost): settle for certain.
    const settled = await settleHeldResult(ctx, requestId, idempotency, budget);
    if (settled === 'delivered') return 'delivered';
    // Unknown past the lease time: the client gets the error. Without a key nobody can collect the result,
    // so a delivery whose COMMIT landed unseen is refunded too, once the database answers.
    if (settled === 'unknown') await refund(ctx, requestId, idempotency, budget, !idempotency);
  } else if (charged) {
    await refund(ctx, requestId, idempotency, budget);
  } else if (idempotency) {
    await budget.bound(ctx.store.releaseIdempotent(idempotency));
  }
  return undefined;
}

/** The error the client gets: a cancelled request's own (its credits refunded), else the failure's. */
function failureOf(error: unknown, signal: AbortSignal): RmbgError {
  return signal.aborted && !isTimeout(error)
    ? new RmbgError(
        'interrupted',
        'the request was cancelled before its image was processed; any credits charged for it were refunded',
        { cause: error },
      )
    : toRmbgError(error);
}

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
        `Idempotency-Key '${key}' belongs to ${original}, which succeeded more than ${LIMIT_TEXT.replayWindow} ` +
          `ago and can no longer be replayed; use a new key for a new billable request`,
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
      const outcome = await ctx.refunder.refundOnce(requestId, idempotency, budget);
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
