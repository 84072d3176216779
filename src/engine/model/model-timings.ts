// How long a photo took with each model on each device here, so `rmbg models list` can say what a model costs
// before a big batch pays it. One small JSON file in the data directory; each batch overwrites its model and
// device's figure (the latest run is what this machine does now).

import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Timing {
  /** Wall time of the batch divided by its processed photos: decode, model and encode together. */
  msPerPhoto: number;
  photos: number;
  at: string;
}

/** model name → device ('cpu', 'gpu') → its latest timing. */
export type Timings = Record<string, Record<string, Timing>>;

const timingsPath = (dataDir: string): string => join(dataDir, 'model-timings.json');

export function readTimings(dataDir: string): Timings {
  try {
    return JSON.parse(readFileSync(timingsPath(dataDir), 'utf8')) as Timings;
  } catch {
    return {};
  }
}

/** Records a batch's time per photo; a figure that cannot be written (read-only data dir) is simply not kept. */
export function recordTiming(dataDir: string, model: string, device: string, ms: number, photos: number): void {
  if (!(photos > 0 && ms > 0)) return;
  const timings = readTimings(dataDir);
  timings[model] = {
    ...timings[model],
    [device]: { msPerPhoto: Math.round(ms / photos), photos, at: new Date().toISOString() },
  };
  const temp = `${timingsPath(dataDir)}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, `${JSON.stringify(timings, null, 2)}\n`);
    renameSync(temp, timingsPath(dataDir));
  } catch {
    // Only a hint for `models list`: never a reason to fail the batch.
  }
}
