// Skip or send, decided before any work: shared with --dry-run so an estimate counts what the batch would send.

import { isFlagged, SUSPECT_BELOW } from '../engine/output/mask-confidence.js';
import type { JournalRecord } from './journal.js';
import { existingOutput, type OutputSlot } from './output-paths.js';

export type ItemPlan =
  | { action: 'send' }
  | { action: 'skip'; reason: 'exists'; output: string }
  /** --retry-review: the journal does not flag it (confident enough, or never done). */
  | { action: 'skip'; reason: 'not-flagged'; output: string | null }
  | { action: 'skip'; reason: 'failed-before'; error: { code: string; message: string } | null };

export function planItem(
  slot: OutputSlot,
  previous: JournalRecord | undefined,
  optionsKey: string,
  flags: { overwrite: boolean; retryFailed: boolean; retryReview?: boolean; reviewBelow?: number },
): ItemPlan {
  const existing = existingOutput(slot);
  if (flags.retryReview) {
    // Only the cutouts the journal flagged run again, over their outputs.
    if (!isFlaggedRecord(previous, flags.reviewBelow ?? SUSPECT_BELOW))
      return { action: 'skip', reason: 'not-flagged', output: existing ?? null };
    return { action: 'send' };
  }
  if (existing && !flags.overwrite) return { action: 'skip', reason: 'exists', output: existing };
  if (
    previous?.state === 'failed' &&
    previous.options === optionsKey &&
    !previous.error?.retryable &&
    !flags.retryFailed
  ) {
    return {
      action: 'skip',
      reason: 'failed-before',
      error: previous.error ? { code: previous.error.code, message: previous.error.message } : null,
    };
  }
  return { action: 'send' };
}

/** A cutout done with a confidence under `below`: shown first in review.html, run again by --retry-review. */
export function isFlaggedRecord(record: JournalRecord | undefined, below: number): boolean {
  return record?.state === 'done' && isFlagged(record.confidence, below);
}
