// Human output on a terminal: a cli-progress bar on stderr (photos per second, time left, credits),
// failures as they happen, and a closing summary that names what failed and how to resume.

import cliProgress from 'cli-progress';
import { policyOf } from '../api/errors.js';
import type { BatchEvent, BatchSummary } from '../batch/batch-events.js';
import { passedOverLines } from './render-passed-over.js';
import { withFix } from './report-error.js';

export function progressRenderer(stream: NodeJS.WriteStream = process.stderr) {
  // A MultiBar with one bar, because only MultiBar can print log lines above the bar.
  const bars = new cliProgress.MultiBar(
    {
      stream,
      format:
        ' {bar} {percentage}% | {value}/{total} | {speed} | {left} | {failed} failed | {credits} credits | {file}',
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let bar: cliProgress.SingleBar | undefined;
  let failed = 0;
  let credits = 0;
  let total = 0;
  let finished = 0;
  const pace = new Pace();
  const render = (event: BatchEvent): void => {
    if (event.type === 'start') {
      total = event.total;
      bar = bars.create(total, 0, { failed, credits, file: '', ...pace.text(total) });
    } else if (event.type === 'arrived') {
      // --watch: a photo landed, so there is more to do.
      total = event.total;
      bar?.setTotal(total);
      bar?.update({ ...pace.text(total - finished) });
    } else if (event.type === 'file') {
      finished += 1;
      if (event.status === 'failed') failed += 1;
      credits += event.credits;
      pace.record(event);
      bar?.increment({ failed, credits, file: event.input.split('/').pop(), ...pace.text(total - finished) });
      if (event.status === 'failed' && event.error)
        bars.log(`failed: ${event.input}: ${event.error.message} (${event.error.code})\n`);
    } else {
      bars.update(); // prints failure lines logged since the last redraw: stop() alone drops them
      bars.stop();
      stream.write(`${summaryText(event)}\n`);
    }
  };
  /** A line for the person above the bar (e.g. that a watch has begun). */
  const note = (text: string): void => {
    bars.log(`${text}\n`);
  };
  return Object.assign(render, { note });
}

/**
 * Photos per second and the time left, from the photos actually processed: a skipped photo (its output is
 * already there) takes no time and would make a resumed run look fast, so it counts for neither.
 */
export class Pace {
  private readonly started = performance.now();
  private processed = 0;

  record(event: { status: string }): void {
    if (event.status !== 'skipped') this.processed += 1;
  }

  /** Photos per second so far, or undefined before the first photo is processed. */
  rate(now = performance.now()): number | undefined {
    const seconds = (now - this.started) / 1000;
    return this.processed === 0 || seconds <= 0 ? undefined : this.processed / seconds;
  }

  text(remaining: number): { speed: string; left: string } {
    const rate = this.rate();
    if (rate === undefined) return { speed: '– photos/s', left: 'time left –' };
    return {
      speed: `${rate.toFixed(rate < 10 ? 1 : 0)} photos/s`,
      left: `${formatDuration(Math.max(0, remaining) / rate)} left`,
    };
  }
}

/** 7 s, 1 min 05 s, 2 h 03 min. */
export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

export function summaryText(summary: BatchSummary): string {
  const seconds = summary.ms / 1000;
  const lines = [
    `rmbg: ${summary.done} done, ${summary.skipped} skipped` +
      (summary.failedBefore ? ` (${summary.failedBefore} failed before; --retry-failed retries them)` : '') +
      `, ${summary.failed} failed` +
      (summary.notStarted ? `, ${summary.notStarted} not started` : '') +
      ` of ${summary.total} in ${seconds.toFixed(1)} s` +
      (summary.done > 0 && seconds > 0 ? ` (${(summary.done / seconds).toFixed(1)} photos/s)` : '') +
      `; ${summary.credits} credit${summary.credits === 1 ? '' : 's'} charged`,
    ...passedOverLines(summary),
  ];
  if (summary.failedInputs.length) {
    const shown = summary.failedInputs.slice(0, 10);
    lines.push(
      `failed: ${shown.join(', ')}${summary.failedInputs.length > shown.length ? ` and ${summary.failedInputs.length - shown.length} more` : ''}`,
    );
  }
  if (summary.reviewPage)
    lines.push(
      `${summary.toReview} cutout${summary.toReview === 1 ? '' : 's'} to check (confidence under ${summary.reviewBelow}), ` +
        `least confident first in ${summary.reviewPage}`,
    );
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
  const why = detail.message ? ` (${withFix(summary.stoppedBy, detail.message)})` : '';
  if (summary.stoppedBy && policyOf(summary.stoppedBy).reportsBalance) {
    const left = detail.creditsLeft === undefined ? '' : ` The account has ${detail.creditsLeft} credits left.`;
    return `stopped: the account is out of credits${why}.${left} Add credits and run the same command again to resume; finished files are not charged again.`;
  }
  if (summary.stoppedBy === 'interrupted')
    return 'interrupted: run the same command again to resume (finished files are skipped, nothing is charged twice).';
  if (summary.stoppedBy) return `stopped: ${summary.stoppedBy}${why}; fix it and run the same command again to resume.`;
  return undefined;
}
