// The closing summary a person reads at a terminal says what the folder walk passed over: the files rmbg does not
// read by extension, and the RAW+JPEG pairs with the half that was processed (render-progress.ts summaryText).

import { describe, expect, it } from 'vitest';
import type { BatchSummary } from '../../../src/batch/batch-events.js';
import { summaryText } from '../../../src/cli/render-progress.js';

const summary: BatchSummary = {
  type: 'summary',
  total: 5,
  done: 5,
  skipped: 0,
  failedBefore: 0,
  failed: 0,
  notStarted: 0,
  credits: 0,
  ms: 1000,
  stoppedBy: null,
  failedInputs: [],
  toReview: 0,
  reviewBelow: 0.5,
  reviewPage: null,
};

describe('summaryText', () => {
  it('names the skipped files by extension and the RAW+JPEG pairs', () => {
    const text = summaryText({
      ...summary,
      ignored: { count: 12, byExtension: { '.xmp': 10, '.mov': 2 } },
      rawPairs: { count: 3, processed: 'jpeg' },
    });
    expect(text.split('\n').slice(1)).toEqual([
      'skipped 12 files rmbg does not read: .xmp 10, .mov 2',
      '3 RAW+JPEG pairs of one shot: the JPEG of each processed, its RAW left (--raw-pairs raw or both to change it)',
    ]);
  });

  it('says nothing more when nothing was passed over', () => {
    expect(summaryText(summary).split('\n')).toHaveLength(1);
  });
});
