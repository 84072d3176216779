// A download's progress: a cli-progress bar with size, speed and time left on a terminal; without one, a line at
// each tenth of the file, or every 10 MB when its size is unknown (a log or CI keeps a readable record, not a
// stream of redraws).

import cliProgress from 'cli-progress';
import type { PullProgress } from '../engine/model/pull-model.js';
import { formatDuration } from './render-progress.js';

const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);

export function downloadRenderer(name: string, stream: NodeJS.WriteStream = process.stderr) {
  const started = performance.now();
  let bar: cliProgress.SingleBar | undefined;
  let lastTenth = -1;
  const pace = (progress: PullProgress) => {
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? (progress.received - progress.resumedFrom) / seconds : 0;
    const left =
      progress.total !== undefined && rate > 0
        ? `${formatDuration((progress.total - progress.received) / rate)} left`
        : 'time left –';
    return { speed: `${mb(rate)} MB/s`, left };
  };
  let first = true;
  const update = (progress: PullProgress): void => {
    if (first && progress.resumedFrom > 0) stream.write(`rmbg: resuming ${name} at ${mb(progress.resumedFrom)} MB\n`);
    first = false;
    const total = progress.total ?? progress.received;
    if (stream.isTTY) {
      bar ??= new cliProgress.SingleBar(
        {
          stream,
          format: ` ${name} {bar} {percentage}% | {got} of {size} MB | {speed} | {left}`,
          hideCursor: true,
          clearOnComplete: false,
        },
        cliProgress.Presets.shades_classic,
      );
      if (!bar.isActive)
        bar.start(total, progress.received, { got: mb(progress.received), size: mb(total), ...pace(progress) });
      else bar.update(progress.received, { got: mb(progress.received), size: mb(total), ...pace(progress) });
      return;
    }
    // Without a size from the server: a line every 10 MB.
    const tenth = progress.total
      ? Math.floor((progress.received / progress.total) * 10)
      : Math.floor(progress.received / 1e7);
    if (tenth === lastTenth) return;
    lastTenth = tenth;
    const { speed, left } = pace(progress);
    const of = progress.total ? ` of ${mb(progress.total)} MB (${tenth * 10}%)` : ' MB';
    stream.write(`rmbg: pulling ${name}: ${mb(progress.received)}${of}, ${speed}, ${left}\n`);
  };
  const stop = (): void => {
    bar?.stop();
  };
  return { update, stop };
}
