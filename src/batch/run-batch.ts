// The batch: for each input decide skip / process / resume from the journal, run the remover with bounded
// (adaptive) concurrency, write outputs atomically, and report progress as events. No terminal output
// and no process.exit here: the CLI renders events and picks the exit code.

import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import pLimit from 'p-limit';
import { policyOf, RmbgError, toRmbgError, type ErrorCode } from '../api/errors.js';
import { canonicalOptions, type RemoveOptions } from '../api/options.js';
import { AdaptiveConcurrency } from './adaptive-concurrency.js';
import { writeFileAtomic, removeStaleTempFiles } from './atomic-write.js';
import type { InputItem } from './discover-inputs.js';
import { Journal, type JournalRecord } from './journal.js';
import { addOutputSlot, assignOutputSlots, existingOutput, EXTENSION, type OutputSlot } from './output-paths.js';
import { planItem } from './plan-item.js';
import type { Remover } from './remover.js';

export type FileStatus = 'done' | 'skipped' | 'failed';

export interface FileEvent {
  type: 'file';
  input: string;
  output: string | null;
  status: FileStatus;
  width: number | null;
  height: number | null;
  ms: number;
  credits: number;
  replayed: boolean;
  /** Why a file was skipped: 'exists' (output present) or 'failed-before' (journal, use --retry-failed). */
  reason?: string;
  error: { code: string; message: string } | null;
}

export interface BatchSummary {
  type: 'summary';
  total: number;
  done: number;
  skipped: number;
  /** Of the skipped: inputs an earlier run failed for a reason a retry will not fix, still without output. */
  failedBefore: number;
  failed: number;
  /** Inputs never started because the batch stopped (Ctrl-C, 402, 403). */
  notStarted: number;
  credits: number;
  ms: number;
  /** Set when the batch stopped early: 'interrupted', or the error code that stopped it. */
  stoppedBy: ErrorCode | null;
  failedInputs: string[];
}

/** An input that landed while the batch runs (--watch): the batch now has `total` inputs. */
export interface ArrivalEvent {
  type: 'arrived';
  input: string;
  total: number;
}

export type BatchEvent = { type: 'start'; total: number } | ArrivalEvent | FileEvent | BatchSummary;

export interface BatchOptions {
  items: InputItem[];
  /**
   * More inputs as they land (rmbg remove --watch, src/batch/watch-inputs.ts), processed like `items`;
   * inputs already seen are left out. The batch ends once this ends, which it must when `signal` aborts:
   * on stop, on cancel, or when an error stops the batch.
   */
  arrivals?: (signal: AbortSignal) => AsyncIterable<InputItem>;
  outputDir: string;
  options: RemoveOptions;
  remover: Remover;
  concurrency: number;
  overwrite: boolean;
  retryFailed: boolean;
  /** Aborting stops scheduling; files in flight finish (their signal is not aborted). */
  stop?: AbortSignal;
  /** Aborting cancels files in flight too (second Ctrl-C). */
  abort?: AbortSignal;
  onEvent: (event: BatchEvent) => void;
}

export async function runBatch(batch: BatchOptions): Promise<BatchSummary> {
  const started = performance.now();
  const { options, remover, onEvent } = batch;
  // A copy: arrivals (--watch) are added to it, in the order they landed.
  const items = [...batch.items];
  // Absolute, like the inputs: the journal and the JSON lines must not depend on the directory a run started in.
  const outputDir = resolve(batch.outputDir);
  const journal = await Journal.open(outputDir);
  // Only after taking the journal's lock: another run's temp files are live, a killed run's are debris.
  await removeStaleTempFiles(outputDir);
  const slots = assignOutputSlots(items, outputDir, options.format);
  const optionsKey = canonicalOptions(options);
  const summary: BatchSummary = {
    type: 'summary',
    total: items.length,
    done: 0,
    skipped: 0,
    failedBefore: 0,
    failed: 0,
    notStarted: 0,
    credits: 0,
    ms: 0,
    stoppedBy: null,
    failedInputs: [],
  };
  const stopOnError = new AbortController();
  const limit = pLimit(batch.concurrency);
  const concurrency = new AdaptiveConcurrency(limit, batch.concurrency);
  remover.onThrottle?.(() => concurrency.throttled());

  const emit = (event: FileEvent) => {
    summary[event.status] += 1;
    summary.credits += event.credits;
    if (event.status === 'failed') summary.failedInputs.push(event.input);
    if (event.reason === 'failed-before') summary.failedBefore += 1;
    onEvent(event);
  };

  const runOne = (item: InputItem) =>
    limit(async () => {
      if (batch.stop?.aborted || stopOnError.signal.aborted) {
        summary.notStarted += 1;
        return;
      }
      const event = await processOne(item, slots.get(item) as OutputSlot, journal, optionsKey, batch);
      emit(event);
      if (event.status === 'done') concurrency.succeeded();
      const code = event.error?.code as ErrorCode | undefined;
      if (code && policyOf(code).stopsBatch && !stopOnError.signal.aborted) {
        summary.stoppedBy = code;
        stopOnError.abort();
      }
    });

  onEvent({ type: 'start', total: items.length });
  try {
    const running = items.map(runOne);
    if (batch.arrivals) {
      // Caught here so that a failure while more inputs are awaited is not unhandled; Promise.all reports it.
      for (const run of running) run.catch(() => undefined);
      const seen = new Set(items.map((item) => item.path));
      const taken = new Set([...slots.values()].map((slot) => slot.base));
      const ended = AbortSignal.any([
        stopOnError.signal,
        ...[batch.stop, batch.abort].filter((signal) => signal !== undefined),
      ]);
      try {
        for await (const item of batch.arrivals(ended)) {
          if (seen.has(item.path)) continue;
          seen.add(item.path);
          slots.set(item, addOutputSlot(item, taken, outputDir, options.format));
          items.push(item);
          summary.total += 1;
          onEvent({ type: 'arrived', input: item.path, total: summary.total });
          const run = runOne(item);
          run.catch(() => undefined);
          running.push(run);
        }
      } catch (error) {
        // The watch failed (a folder removed, too many watches): start nothing more, let the photos in
        // flight finish before the journal closes, then report it.
        stopOnError.abort();
        await Promise.allSettled(running);
        throw error;
      }
    }
    await Promise.all(running);
  } finally {
    await journal.close();
  }
  // Stopped by the user even when nothing was left to start (the last files were in flight, or cancelled).
  // A watch has no end of its own: stopping it with nothing left undone is how it ends, not an interruption.
  const stoppedEarly = batch.stop?.aborted && batch.arrivals === undefined;
  if (!summary.stoppedBy && (summary.notStarted > 0 || stoppedEarly || batch.abort?.aborted))
    summary.stoppedBy = 'interrupted';
  // In input order, not completion order: the same failures read the same on every run.
  const inputOrder = new Map(items.map((item, index) => [item.path, index]));
  summary.failedInputs.sort((a, b) => (inputOrder.get(a) ?? 0) - (inputOrder.get(b) ?? 0));
  summary.ms = Math.round(performance.now() - started);
  onEvent(summary);
  return summary;
}

async function processOne(
  item: InputItem,
  slot: OutputSlot,
  journal: Journal,
  optionsKey: string,
  batch: BatchOptions,
): Promise<FileEvent> {
  const started = performance.now();
  const base = {
    type: 'file' as const,
    input: item.path,
    width: null,
    height: null,
    credits: 0,
    replayed: false,
    error: null,
  };
  const elapsed = () => Math.round(performance.now() - started);
  const previous = await settleFinished(journal, journal.latest(item.path), slot, optionsKey);
  const plan = planItem(slot, previous, optionsKey, batch);
  if (plan.action === 'skip' && plan.reason === 'exists')
    return { ...base, output: plan.output, status: 'skipped', reason: plan.reason, ms: elapsed() };
  const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
  let known: Buffer | undefined;
  if (plan.action === 'skip') {
    // Failed before for a reason a retry will not fix, unless the photo was replaced since: then it is new.
    known = await readFile(item.path).catch(() => undefined);
    if (!known || sha256(known) === previous?.contentHash) {
      return { ...base, output: null, status: 'skipped', reason: plan.reason, ms: elapsed(), error: plan.error };
    }
  }

  let record: Omit<JournalRecord, 'at'> | undefined;
  try {
    const image =
      known ??
      (await readFile(item.path).catch((error: Error) => {
        throw new RmbgError('io_error', `cannot read ${item.path}: ${error.message}`, { cause: error });
      }));
    const contentHash = sha256(image);
    // Same content and options as an earlier run: the remover gets its token back, so a request the server
    // already charged is replayed for free rather than charged again.
    const sameRequest = previous && previous.contentHash === contentHash && previous.options === optionsKey;
    const earlierSentAt = sameRequest ? firstSent(previous) : undefined;
    const earlier =
      sameRequest && previous.token !== undefined
        ? {
            token: previous.token,
            finished: previous.state === 'done',
            sentAt: earlierSentAt === undefined ? undefined : Date.parse(earlierSentAt),
          }
        : undefined;
    // A failure before anything is sent (the remover refusing to pay again) keeps the earlier token and its date.
    const sent: Omit<JournalRecord, 'at'> = {
      input: item.path,
      state: 'sent',
      contentHash,
      options: optionsKey,
      ...(earlier && { token: earlier.token, sentAt: earlierSentAt }),
    };
    record = sent;
    const result = await batch.remover.remove(image, batch.options, {
      signal: batch.abort,
      filename: item.relativePath,
      earlier,
      payAgain: batch.retryFailed,
      beforeSend: async (token) => {
        // The first sending of a token dates it: sending it again does not make the server remember it longer.
        const sentAt =
          earlier && token === earlier.token && earlierSentAt !== undefined ? earlierSentAt : new Date().toISOString();
        record = { ...sent, token, sentAt };
        await journal.append(record);
      },
    });
    const output = slot.base + EXTENSION[result.format];
    await writeFileAtomic(output, result.data).catch((error: Error) => {
      throw new RmbgError('io_error', `cannot write ${output}: ${error.message}`, { cause: error });
    });
    // With format=auto a re-run may switch png↔jpg: leave only the fresh output in the slot.
    await Promise.all(
      slot.extensions.filter((ext) => slot.base + ext !== output).map((ext) => rm(slot.base + ext, { force: true })),
    );
    await journal.append({ ...record, state: 'done', output, credits: result.creditsCharged });
    // A replay of a request an earlier run sent was paid then; a replay of one first sent by this run (its
    // answer was lost and a retry collected it) was paid now, and the summary must say so.
    const paidEarlier = result.replayed && earlier !== undefined && earlier.token === result.token;
    const credits = paidEarlier ? 0 : result.creditsCharged;
    return {
      ...base,
      output,
      status: 'done',
      width: result.width,
      height: result.height,
      credits,
      replayed: result.replayed,
      ms: elapsed(),
    };
  } catch (error) {
    const failure = toRmbgError(error);
    const retryable = policyOf(failure.code).retryNextRun;
    if (record)
      await journal.append({
        ...record,
        state: 'failed',
        error: { code: failure.code, message: failure.message, retryable },
      });
    return {
      ...base,
      output: null,
      status: 'failed',
      ms: elapsed(),
      error: { code: failure.code, message: failure.message },
    };
  }
}

/**
 * When an earlier run first sent its token. Journals written before sentAt have the time of the token's last
 * line (its sending, or the failure that followed it).
 */
function firstSent(record: JournalRecord): string | undefined {
  const time = record.sentAt ?? record.at;
  return Number.isNaN(Date.parse(time)) ? undefined : time;
}

/**
 * A record left 'sent' although the output is in place: the run was killed after the output was renamed
 * into place and before its 'done' line was written. The output exists, so the request finished: record it
 * done, or a later --overwrite would take the request for one paid without a result.
 */
async function settleFinished(
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
