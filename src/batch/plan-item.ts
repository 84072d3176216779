// Skip or send, decided before any work: shared with --dry-run so an estimate counts what the batch would send.

import type { JournalRecord } from './journal.js';
import { existingOutput, type OutputSlot } from './output-paths.js';

export type ItemPlan =
  | { action: 'send' }
  | { action: 'skip'; reason: 'exists'; output: string }
  | { action: 'skip'; reason: 'failed-before'; error: { code: string; message: string } | null };

export function planItem(
  slot: OutputSlot,
  previous: JournalRecord | undefined,
  optionsKey: string,
  flags: { overwrite: boolean; retryFailed: boolean },
): ItemPlan {
  const existing = existingOutput(slot);
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
