// The API says what is wrong; the CLI adds the rmbg command that fixes it, on its error line and in the summary
// of a batch that stopped.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import type { BatchSummary } from '../../../src/batch/batch-events.js';
import { stopHint } from '../../../src/cli/render-progress.js';
import { reportError } from '../../../src/cli/report-error.js';

const OUT_OF_CREDITS = 'an image costs 1 credit and the balance is 0 (subscription 0, payg 0)';

function stoppedBy(code: BatchSummary['stoppedBy']): BatchSummary {
  return {
    type: 'summary',
    total: 3,
    done: 1,
    skipped: 0,
    failedBefore: 0,
    failed: 1,
    notStarted: 1,
    credits: 1,
    ms: 10,
    stoppedBy: code,
    failedInputs: ['b.jpg'],
    toReview: 0,
    reviewBelow: 0.5,
    reviewPage: null,
  };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the CLI adds the command that fixes an error', () => {
  it('reportError: the message, then `rmbg credits add`, then the code; exit 1', () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    const exit = reportError(new RmbgError('insufficient_credits', OUT_OF_CREDITS));
    expect(written).toEqual([
      `rmbg: ${OUT_OF_CREDITS}; add credits with \`rmbg credits add\` (insufficient_credits)\n`,
    ]);
    expect(exit).toBe(1);
  });

  it('reportError leaves a message with no fix of rmbg as it is', () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    reportError(new RmbgError('invalid_option', "size must be one of …; got 'huge'"), 'photo.jpg');
    expect(written).toEqual(["rmbg: photo.jpg: size must be one of …; got 'huge' (invalid_option)\n"]);
  });

  it('a batch stopped by 402: the server message, the balance and `rmbg credits add`', () => {
    expect(stopHint(stoppedBy('insufficient_credits'), { message: OUT_OF_CREDITS, creditsLeft: 0 })).toBe(
      `stopped: the account is out of credits (${OUT_OF_CREDITS}; add credits with \`rmbg credits add\`). ` +
        'The account has 0 credits left. Add credits and run the same command again to resume; finished files are not charged again.',
    );
  });

  it('a batch stopped by a missing key: `rmbg keys create`', () => {
    expect(stopHint(stoppedBy('missing_api_key'), { message: 'the X-API-Key header is missing or empty' })).toBe(
      'stopped: missing_api_key (the X-API-Key header is missing or empty; create a key with `rmbg keys create`); ' +
        'fix it and run the same command again to resume.',
    );
  });
});
