// Human output on a terminal: a cli-progress bar on stderr (credits and ETA), failures as they happen,
// and a closing summary that names what failed and how to resume.

import cliProgress from 'cli-progress';
import type { BatchEvent, BatchSummary } from '../batch/run-batch.js';

export function progressRenderer(stream: NodeJS.WriteStream = process.stderr) {
  // A MultiBar with one bar, because only MultiBar can print log lines above the bar.
  const bars = new cliProgress.MultiBar(
    {
      stream,
      format: ' {bar} {percentage}% | {value}/{total} | {failed} failed | {credits} credits | ETA {eta_formatted} | {file}',
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let bar: cliProgress.SingleBar | undefined;
  let failed = 0;
  let credits = 0;
  return (event: BatchEvent): void => {
    if (event.type === 'start') {
      bar = bars.create(event.total, 0, { failed, credits, file: '' });
    } else if (event.type === 'file') {
      if (event.status === 'failed') failed += 1;
      credits += event.credits;
      bar?.increment({ failed, credits, file: event.input.split('/').pop() });
      if (event.status === 'failed' && event.error) bars.log(`failed: ${event.input}: ${event.error.message} (${event.error.code})\n`);
    } else {
      bars.update(); // prints failure lines logged since the last redraw: stop() alone drops them
      bars.stop();
      stream.write(summaryText(event) + '\n');
    }
  };
}

export function summaryText(summary: BatchSummary): string {
  const lines = [
    `rmbg: ${summary.done} done, ${summary.skipped} skipped` +
      (summary.failedBefore ? ` (${summary.failedBefore} failed before; --retry-failed retries them)` : '') +
      `, ${summary.failed} failed` +
      (summary.notStarted ? `, ${summary.notStarted} not started` : '') +
      ` of ${summary.total} in ${(summary.ms / 1000).toFixed(1)} s` +
      (summary.credits ? `; ${summary.credits} credits charged` : ''),
  ];
  if (summary.failedInputs.length) {
    const shown = summary.failedInputs.slice(0, 10);
    lines.push(`failed: ${shown.join(', ')}${summary.failedInputs.length > shown.length ? ` and ${summary.failedInputs.length - shown.length} more` : ''}`);
  }
  const hint = stopHint(summary);
  if (hint) lines.push(hint);
  return lines.join('\n');
}

/** What the user learns about why a batch stopped early, beyond its code. */
export interface StopDetail {
  /** The message of the error that stopped the batch (e.g. the server's "balance is 0"). */
  message?: string;
  /** The account's balance after the stop, when the server could tell. */
  creditsLeft?: number;
}

/** Why the batch stopped and how to resume, or undefined when it ran to the end. */
export function stopHint(summary: BatchSummary, detail: StopDetail = {}): string | undefined {
  const why = detail.message ? ` (${detail.message})` : '';
  if (summary.stoppedBy === 'insufficient_credits') {
    const left = detail.creditsLeft === undefined ? '' : ` The account has ${detail.creditsLeft} credits left.`;
    return `stopped: the account is out of credits${why}.${left} Add credits and run the same command again to resume; finished files are not charged again.`;
  }
  if (summary.stoppedBy === 'interrupted') return 'interrupted: run the same command again to resume (finished files are skipped, nothing is charged twice).';
  if (summary.stoppedBy) return `stopped: ${summary.stoppedBy}${why}; fix it and run the same command again to resume.`;
  return undefined;
}
