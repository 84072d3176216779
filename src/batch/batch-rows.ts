// The batch's rows of settings/remove.ts as runBatch takes them, for both of its callers (`rmbg remove` and the
// library's removeBackgrounds()): a batch row reaches the batch here once, whichever caller it came through.

import { BATCH_SETTINGS } from '../settings/remove.js';
import { concurrencyOf, type Remover } from './remover.js';
import type { RawPairs } from './discover-inputs.js';
import type { MaskOutput } from './output-paths.js';
import type { BatchOptions } from './run-batch.js';

/** The rows by their names, as the CLI's flags and the library's options both hold them. */
export interface BatchRows {
  outDir: string;
  recursive?: boolean | undefined;
  concurrency?: number | undefined;
  overwrite?: boolean | undefined;
  retryFailed?: boolean | undefined;
  reviewBelow?: number | undefined;
  reviewPage?: boolean | undefined;
  retryReview?: boolean | undefined;
  mask?: boolean | undefined;
  maskOnly?: boolean | undefined;
  rawPairs?: RawPairs | undefined;
}

/** Which mask files the rows ask for (--mask-only wins over --mask). */
export function maskOutputOf(rows: Pick<BatchRows, 'mask' | 'maskOnly'>): MaskOutput {
  return rows.maskOnly ? 'only' : rows.mask ? 'beside' : undefined;
}

/** The batch's settings from its rows; the concurrency left out is the remover's default (concurrencyOf). */
export function batchRowsOf(
  rows: BatchRows,
  remover: Remover,
): Pick<
  BatchOptions,
  | 'outputDir'
  | 'recursive'
  | 'concurrency'
  | 'overwrite'
  | 'retryFailed'
  | 'reviewBelow'
  | 'reviewPage'
  | 'retryReview'
  | 'mask'
  | 'rawPairs'
> {
  return {
    outputDir: rows.outDir,
    recursive: Boolean(rows.recursive),
    concurrency: concurrencyOf(rows.concurrency, remover),
    overwrite: Boolean(rows.overwrite),
    retryFailed: Boolean(rows.retryFailed),
    reviewBelow: rows.reviewBelow ?? BATCH_SETTINGS.reviewBelow.default,
    reviewPage: Boolean(rows.reviewPage),
    retryReview: Boolean(rows.retryReview),
    mask: maskOutputOf(rows),
    rawPairs: rows.rawPairs ?? BATCH_SETTINGS.rawPairs.default,
  };
}
