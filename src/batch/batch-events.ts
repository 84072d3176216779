// What a batch tells as it runs (runBatch's onEvent, batchEvents' items): it starts, inputs land (--watch), each
// file ends, and the summary. The CLI's renderers, the library's removeBackgrounds() and its callers read these.

import type { ErrorCode } from '../api/errors.js';
import type { PassedOver } from './discover-inputs.js';

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
  /**
   * Why a file was skipped: 'exists' (output present), 'failed-before' (journal, use --retry-failed) or, with
   * --retry-review, 'not-flagged' (the journal does not flag its cutout).
   */
  reason?: string;
  /** The cutout's confidence, 0..1 (engine/output/mask-confidence.ts): this run's, or for a skipped file the
   * journal's; absent through a server that does not send it. */
  confidence?: number;
  /** Where the model ran for a file done on this computer: its GPU or CPU. */
  device?: 'gpu' | 'cpu';
  /** The mask file this run wrote (--mask, --mask-only). */
  mask?: string;
  error: { code: string; message: string } | null;
}

export interface BatchSummary extends PassedOver {
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
  /** Cutouts of this batch (done now or before) whose confidence is under `reviewBelow`. */
  toReview: number;
  reviewBelow: number;
  /** The output folder's review.html, written when a cutout is flagged or the batch asks for it; else null. */
  reviewPage: string | null;
  /** Where the model runs, for a batch on this computer: its GPU or CPU. */
  device?: 'gpu' | 'cpu';
}

/** An input that landed while the batch runs (--watch): the batch now has `total` inputs. */
export interface ArrivalEvent {
  type: 'arrived';
  input: string;
  total: number;
}

/**
 * The settings a batch runs with, by their rows' names (settings/remove.ts, settings/engine.ts): its own, read
 * where it holds them, and its remover's. A row that reaches neither is missing here.
 */
export type BatchSettings = Readonly<Record<string, unknown>>;

/** The batch begins with `total` inputs (arrivals add to it) and these settings in force. */
export interface StartEvent {
  type: 'start';
  total: number;
  settings: BatchSettings;
}

export type BatchEvent = StartEvent | ArrivalEvent | FileEvent | BatchSummary;
