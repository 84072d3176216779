// A folder run: plan, send, write and journal each input under adaptive concurrency; it prints and exits nothing.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import pLimit, { type LimitFunction } from 'p-limit';
import { policyOf, RmbgError, toRmbgError, type ErrorCode } from '../api/errors.js';
import { OUTPUT_FORMATS } from '../api/media-types.js';
import { canonicalOptions, type RemoveOptions } from '../api/options.js';
import { AdaptiveConcurrency } from './adaptive-concurrency.js';
import { writeFileAtomic, removeStaleTempFiles } from './atomic-write.js';
import type { BatchEvent, BatchSettings, BatchSummary, FileEvent } from './batch-events.js';
import type { InputItem, PassedOver, RawPairs } from './discover-inputs.js';
import { readInput } from './read-input.js';
import { Journal, type JournalRecord } from './journal.js';
import {
  addOutputSlot,
  assignOutputSlots,
  existingCutout,
  existingOutput,
  maskPathOf,
  type MaskOutput,
  type OutputSlot,
} from './output-paths.js';
import { isFlagged, SUSPECT_BELOW } from '../engine/output/mask-confidence.js';
import { planItem } from './plan-item.js';
import type { RemoveCall, RemovedImage, Remover } from './remover.js';
import { removeReviewPage, type ReviewEntry, writeReviewPage } from './review-page.js';

export interface BatchOptions {
  items: InputItem[];
  /** What finding the items passed over (files not read, the other half of RAW+JPEG pairs): said in the summary. */
  passedOver?: PassedOver;
  /** Inputs as they land (--watch, watch-inputs.ts); must end when `signal` aborts, and the batch ends with it. */
  arrivals?: (signal: AbortSignal) => AsyncIterable<InputItem>;
  outputDir: string;
  /** Whether the inputs were found, and arrivals are watched, in subfolders too (the caller finds them). */
  recursive?: boolean;
  options: RemoveOptions;
  remover: Remover;
  concurrency: number;
  overwrite: boolean;
  retryFailed: boolean;
  /** Cutouts under this confidence are flagged (counted, first in review.html); default SUSPECT_BELOW. */
  reviewBelow?: number;
  /** Write review.html even when no cutout is flagged (it is written when one is). */
  reviewPage?: boolean;
  /** Run only the cutouts the journal flags, over their outputs (on this computer, with another model). */
  retryReview?: boolean;
  /** The mask file beside each cutout, or instead of it (on this computer only). */
  mask?: MaskOutput;
  /** Which half of a RAW+JPEG pair the inputs' discovery kept: said in the start event's settings. */
  rawPairs?: RawPairs;
  /** Aborting stops scheduling; files in flight finish (their signal is not aborted). */
  stop?: AbortSignal;
  /** Aborting cancels files in flight too (second Ctrl-C). */
  abort?: AbortSignal;
  onEvent: (event: BatchEvent) => void;
}

export async function runBatch(batch: BatchOptions): Promise<BatchSummary> {
  const run = await BatchRun.open(batch);
  try {
    await run.processAll();
    await run.writeReview();
  } finally {
    await run.journal.close();
  }
  return run.finish();
}

/** One run of the batch: its inputs, their output slots, the journal, and the counts of its summary. */
class BatchRun {
  private readonly summary: BatchSummary;
  /** Aborted by the first error that stops the batch (402, 403, …): nothing more starts. */
  private readonly stopOnError = new AbortController();
  private readonly limit: LimitFunction;
  private readonly concurrency: AdaptiveConcurrency;
  private readonly optionsKey: string;
  /** The cutouts of this batch with their confidence, for review.html. */
  private readonly reviewEntries: ReviewEntry[] = [];
  private readonly reviewBelow: number;

  private constructor(
    private readonly started: number,
    private readonly batch: BatchOptions,
    /** A copy of the batch's items: arrivals (--watch) are added to it, in the order they landed. */
    private readonly items: InputItem[],
    private readonly outputDir: string,
    readonly journal: Journal,
    private readonly slots: Map<InputItem, OutputSlot>,
  ) {
    this.reviewBelow = batch.reviewBelow ?? SUSPECT_BELOW;
    this.summary = emptySummary(items.length, this.reviewBelow, batch.remover.device?.device);
    this.optionsKey = canonicalOptions(batch.options);
    this.limit = pLimit(batch.concurrency);
    this.concurrency = new AdaptiveConcurrency(this.limit, batch.concurrency);
    batch.remover.onThrottle?.(() => this.concurrency.throttled());
  }

  /** Takes the output folder's journal (and its lock) and gives every input its output slot. */
  static async open(batch: BatchOptions): Promise<BatchRun> {
    const started = performance.now();
    const refusal = batch.retryReview ? batch.remover.retryReviewRefusal : undefined;
    if (refusal !== undefined) throw new RmbgError('usage_error', refusal);
    batch.remover.refuseOutputs?.(batch.options, batch.mask !== undefined);
    const items = [...batch.items];
    // Absolute, like the inputs: the journal and the JSON lines must not depend on the directory a run started in.
    const outputDir = resolve(batch.outputDir);
    const journal = await Journal.open(outputDir);
    // Only after taking the journal's lock: another run's temp files are live, a killed run's are debris.
    await removeStaleTempFiles(outputDir);
    const slots = assignOutputSlots(items, outputDir, batch.options.format, batch.mask);
    return new BatchRun(started, batch, items, outputDir, journal, slots);
  }

  /** Every input, then every arrival, under the concurrency limit; resolves once all have finished. */
  async processAll(): Promise<void> {
    this.batch.onEvent({ type: 'start', total: this.items.length, settings: this.settings() });
    const running = this.items.map((item) => this.schedule(item));
    if (this.batch.arrivals) {
      // Caught here so that a failure while more inputs are awaited is not unhandled; Promise.all reports it.
      for (const run of running) run.catch(() => undefined);
      await this.takeArrivals(this.batch.arrivals, running);
    }
    await Promise.all(running);
  }

  /** The settings in force: the remover's, and the batch's own as this run holds them. */
  private settings(): BatchSettings {
    const { remover, recursive, overwrite, retryFailed, reviewPage, retryReview, arrivals, mask, rawPairs } =
      this.batch;
    return {
      ...remover.settings,
      outDir: this.outputDir,
      recursive: Boolean(recursive),
      watch: arrivals !== undefined,
      concurrency: this.concurrency.current,
      overwrite,
      retryFailed,
      reviewBelow: this.reviewBelow,
      reviewPage: Boolean(reviewPage),
      retryReview: Boolean(retryReview),
      mask: mask !== undefined,
      maskOnly: mask === 'only',
      rawPairs,
    };
  }

  /** Adds each arrival to the batch and schedules it, until the arrivals end. */
  private async takeArrivals(arrivals: NonNullable<BatchOptions['arrivals']>, running: Promise<void>[]): Promise<void> {
    const seen = new Set(this.items.map((item) => item.path));
    const taken = new Set([...this.slots.values()].map((slot) => slot.base));
    const { stop, abort } = this.batch;
    const ended = AbortSignal.any([this.stopOnError.signal, ...[stop, abort].filter((signal) => signal !== undefined)]);
    try {
      for await (const item of arrivals(ended)) {
        if (seen.has(item.path)) continue;
        seen.add(item.path);
        this.slots.set(item, addOutputSlot(item, taken, this.outputDir, this.batch.options.format, this.batch.mask));
        this.items.push(item);
        this.summary.total += 1;
        this.batch.onEvent({ type: 'arrived', input: item.path, total: this.summary.total });
        const run = this.schedule(item);
        run.catch(() => undefined);
        running.push(run);
      }
    } catch (error) {
      // The watch failed (a folder removed, too many watches): start nothing more, let the photos in
      // flight finish before the journal closes, then report it.
      this.stopOnError.abort();
      await Promise.allSettled(running);
      throw error;
    }
  }

  /** Processes one input when the concurrency allows, unless the batch has stopped by then. */
  private schedule(item: InputItem): Promise<void> {
    return this.limit(async () => {
      if (this.batch.stop?.aborted || this.stopOnError.signal.aborted) {
        this.summary.notStarted += 1;
        return;
      }
      const slot = this.slots.get(item) as OutputSlot;
      const event = await processOne(item, slot, this.journal, this.optionsKey, this.batch);
      this.count(event);
      this.batch.onEvent(event);
      if (event.status === 'done') this.concurrency.succeeded();
      const code = event.error?.code as ErrorCode | undefined;
      if (code && policyOf(code).stopsBatch && !this.stopOnError.signal.aborted) {
        this.summary.stoppedBy = code;
        this.stopOnError.abort();
      }
    });
  }

  /** Adds a file's outcome to the summary. */
  private count(event: FileEvent): void {
    this.summary[event.status] += 1;
    this.summary.credits += event.credits;
    if (event.status === 'failed') this.summary.failedInputs.push(event.input);
    if (event.reason === 'failed-before') this.summary.failedBefore += 1;
    if (event.output !== null) {
      this.reviewEntries.push({ input: event.input, output: event.output, confidence: event.confidence });
      if (isFlagged(event.confidence, this.reviewBelow)) this.summary.toReview += 1;
    }
  }

  /**
   * review.html when a cutout is flagged or the batch asks for it; otherwise an earlier run's page goes, so that
   * the folder holds no page about other cutouts than this run's.
   */
  async writeReview(): Promise<void> {
    const written = this.summary.toReview > 0 || Boolean(this.batch.reviewPage);
    const page = written
      ? writeReviewPage(this.outputDir, this.reviewEntries, this.reviewBelow)
      : removeReviewPage(this.outputDir).then(() => null);
    this.summary.reviewPage = await page.catch((error: Error) => {
      throw new RmbgError('io_error', `cannot write the review page in ${this.outputDir}: ${error.message}`, {
        cause: error,
      });
    });
  }

  /** Completes the summary and emits it. */
  finish(): BatchSummary {
    const { summary, batch } = this;
    // Stopped by the user even when nothing was left to start (the last files were in flight, or cancelled).
    // A watch has no end of its own: stopping it with nothing left undone is how it ends, not an interruption.
    const stoppedEarly = batch.stop?.aborted && batch.arrivals === undefined;
    if (!summary.stoppedBy && (summary.notStarted > 0 || stoppedEarly || batch.abort?.aborted))
      summary.stoppedBy = 'interrupted';
    // In input order, not completion order: the same failures read the same on every run.
    const inputOrder = new Map(this.items.map((item, index) => [item.path, index]));
    summary.failedInputs.sort((a, b) => (inputOrder.get(a) ?? 0) - (inputOrder.get(b) ?? 0));
    summary.ms = Math.round(performance.now() - this.started);
    Object.assign(summary, batch.passedOver);
    batch.onEvent(summary);
    return summary;
  }
}

function emptySummary(total: number, reviewBelow: number, device: BatchSummary['device']): BatchSummary {
  return {
    type: 'summary',
    total,
    done: 0,
    skipped: 0,
    failedBefore: 0,
    failed: 0,
    notStarted: 0,
    credits: 0,
    ms: 0,
    stoppedBy: null,
    failedInputs: [],
    toReview: 0,
    reviewBelow,
    reviewPage: null,
    ...(device && { device }),
  };
}

/** A journal record before `append` dates it. */
type UndatedRecord = Omit<JournalRecord, 'at'>;

/** The request an earlier run sent for the same content and options, as far as the journal knows it. */
interface EarlierRequest {
  /** What the remover is told (undefined when that run sent no token, e.g. a local run). */
  call: RemoveCall['earlier'];
  /** When that run first sent it (ISO 8601), when the journal says. */
  firstSentAt: string | undefined;
}

/** What a file's event says beyond its input and time; unsaid fields keep their defaults (nothing done). */
type FileOutcome = Pick<FileEvent, 'output' | 'status'> &
  Partial<
    Pick<FileEvent, 'reason' | 'width' | 'height' | 'credits' | 'replayed' | 'error' | 'device' | 'confidence' | 'mask'>
  >;

/** One input: skipped as planned, or sent through the remover and its output written, each step journaled. */
async function processOne(
  item: InputItem,
  slot: OutputSlot,
  journal: Journal,
  optionsKey: string,
  batch: BatchOptions,
): Promise<FileEvent> {
  const started = performance.now();
  const event = (outcome: FileOutcome): FileEvent => ({
    type: 'file',
    input: item.path,
    width: null,
    height: null,
    credits: 0,
    replayed: false,
    error: null,
    ...outcome,
    ms: Math.round(performance.now() - started),
  });
  const previous = await markDoneIfOutputExists(journal, journal.latest(item.path), slot, optionsKey);
  const plan = planItem(slot, previous, optionsKey, batch);
  if (plan.action === 'skip' && plan.reason !== 'failed-before') {
    // The journal's confidence for the cutout in place, so that a resumed batch's summary and page still have it.
    const kept = previous?.state === 'done' && previous.output === plan.output ? previous.confidence : undefined;
    return event({
      output: plan.output,
      status: 'skipped',
      reason: plan.reason,
      ...(kept !== undefined && { confidence: kept }),
    });
  }
  let image: Buffer | undefined;
  if (plan.action === 'skip') {
    // Failed before for a reason a retry will not fix, unless the photo was replaced since: then it is new.
    image = await readInput(item).catch(() => undefined);
    if (!image || sha256(image) === previous?.contentHash)
      return event({ output: null, status: 'skipped', reason: plan.reason, error: plan.error });
  }

  let record: UndatedRecord | undefined; // the request's last journal line, written or about to be
  try {
    image ??= await readInput(item);
    const contentHash = sha256(image);
    const earlier = earlierRequest(previous, contentHash, optionsKey);
    // A failure before anything is sent (the remover refusing to pay again) keeps the earlier token and its date.
    const sent: UndatedRecord = {
      input: item.path,
      state: 'sent',
      contentHash,
      options: optionsKey,
      ...(earlier.call && { token: earlier.call.token, sentAt: earlier.firstSentAt }),
    };
    record = sent;
    const result = await batch.remover.remove(image, batch.options, {
      signal: batch.abort,
      filename: item.relativePath,
      earlier: earlier.call,
      payAgain: batch.retryFailed,
      mask: slot.mask,
      beforeSend: async (token) => {
        record = { ...sent, token, sentAt: sentAtFor(token, earlier) };
        await journal.append(record);
      },
    });
    // An output already in place stays unless the run replaces outputs: only its missing mask is written then.
    const { output, mask } = await writeOutputs(slot, result, batch.overwrite || Boolean(batch.retryReview));
    const { confidence } = result;
    await journal.append({
      ...record,
      state: 'done',
      output,
      ...(mask && { mask }),
      credits: result.creditsCharged,
      ...(confidence !== undefined && { confidence }),
    });
    const credits = creditsOfThisRun(result, earlier);
    return event({
      output,
      status: 'done',
      width: result.width,
      height: result.height,
      credits,
      replayed: result.replayed,
      ...(confidence !== undefined && { confidence }),
      ...(result.device && { device: result.device }),
      ...(mask && { mask }),
    });
  } catch (error) {
    const { code, message } = toRmbgError(error);
    const retryable = policyOf(code).retryNextRun;
    if (record) await journal.append({ ...record, state: 'failed', error: { code, message, retryable } });
    return event({ output: null, status: 'failed', error: { code, message } });
  }
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** The same content and options as an earlier run: its token goes back to the remover, so a charge is replayed. */
function earlierRequest(previous: JournalRecord | undefined, contentHash: string, optionsKey: string): EarlierRequest {
  if (!previous || previous.contentHash !== contentHash || previous.options !== optionsKey)
    return { call: undefined, firstSentAt: undefined };
  const firstSentAt = firstSent(previous);
  if (previous.token === undefined) return { call: undefined, firstSentAt };
  const sentAt = firstSentAt === undefined ? undefined : Date.parse(firstSentAt);
  return { call: { token: previous.token, finished: previous.state === 'done', sentAt }, firstSentAt };
}

/** The first sending of a token dates it: sending it again does not make the server remember it longer. */
function sentAtFor(token: string | undefined, earlier: EarlierRequest): string {
  const { call, firstSentAt } = earlier;
  if (call && token === call.token && firstSentAt !== undefined) return firstSentAt;
  return new Date().toISOString();
}

/** A replay of an earlier run's request was paid then; one of this run's own (a retry after a lost answer), now. */
function creditsOfThisRun(result: RemovedImage, earlier: EarlierRequest): number {
  const paidEarlier = result.replayed && earlier.call !== undefined && earlier.call.token === result.token;
  return paidEarlier ? 0 : result.creditsCharged;
}

/** Writes `data` atomically, or fails as an io_error naming the file. */
async function writeFile(path: string, data: Buffer): Promise<void> {
  await writeFileAtomic(path, data).catch((error: Error) => {
    throw new RmbgError('io_error', `cannot write ${path}: ${error.message}`, { cause: error });
  });
}

/** Writes the result's files into its slot: the cutout (the slot's other extensions go: format=auto may switch
 * png↔jpg) and the mask, each unless it is in place and `replace` is off. The output is the mask's with --mask-only. */
async function writeOutputs(
  slot: OutputSlot,
  result: RemovedImage,
  replace: boolean,
): Promise<{ output: string; mask: string | undefined }> {
  let output: string | undefined;
  if (slot.mask !== 'only') {
    output = replace ? undefined : existingCutout(slot);
    if (output === undefined) {
      const written = slot.base + OUTPUT_FORMATS[result.format].extension;
      await writeFile(written, result.data);
      const others = slot.extensions.filter((ext) => slot.base + ext !== written);
      await Promise.all(others.map((ext) => rm(slot.base + ext, { force: true })));
      output = written;
    }
  }
  if (slot.mask === undefined) return { output: output as string, mask: undefined };
  const mask = maskPathOf(slot);
  if (!result.mask) throw new RmbgError('processing_failed', 'the engine made no mask for this photo');
  if (replace || !existsSync(mask)) await writeFile(mask, result.mask);
  return { output: output ?? mask, mask };
}

/** When an earlier run first sent its token; journals older than `sentAt` give the token's last line's time. */
function firstSent(record: JournalRecord): string | undefined {
  const time = record.sentAt ?? record.at;
  return Number.isNaN(Date.parse(time)) ? undefined : time;
}

/**
 * A 'sent' record whose output is in place (a kill between the rename and the 'done' line) is recorded done,
 * or a later --overwrite would take it for a request paid without a result.
 */
async function markDoneIfOutputExists(
  journal: Journal,
  previous: JournalRecord | undefined,
  slot: OutputSlot,
  optionsKey: string,
): Promise<JournalRecord | undefined> {
  if (previous?.state !== 'sent' || previous.options !== optionsKey) return previous;
  const output = existingOutput(slot);
  if (output === undefined) return previous;
  const { at: _at, ...record } = previous;
  await journal.append({ ...record, state: 'done', output });
  return journal.latest(previous.input);
}

/** The batch as an async iterator; leaving the loop early cancels the files in flight and closes the journal. */
export async function* batchEvents(batch: Omit<BatchOptions, 'onEvent'>): AsyncGenerator<BatchEvent, void, undefined> {
  const pending: BatchEvent[] = [];
  let wake: (() => void) | undefined;
  let finished = false;
  let failure: { error: unknown } | undefined;
  const leave = new AbortController();
  const either = (signal: AbortSignal | undefined) => (signal ? AbortSignal.any([signal, leave.signal]) : leave.signal);

  const running = runBatch({
    ...batch,
    stop: either(batch.stop),
    abort: either(batch.abort),
    onEvent: (event) => {
      pending.push(event);
      wake?.();
    },
  }).then(
    () => undefined,
    (error: unknown) => {
      failure = { error };
    },
  );
  void running.finally(() => {
    finished = true;
    wake?.();
  });

  try {
    for (;;) {
      const event = pending.shift();
      if (event) yield event;
      else if (finished) break;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
    if (failure) throw failure.error;
  } finally {
    leave.abort();
    await running;
  }
}
