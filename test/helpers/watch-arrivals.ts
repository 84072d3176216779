// watchInputs over one folder (recursive), its arrivals collected as relative paths until the test's condition
// holds: the set-up the --watch unit tests share.

import { join } from 'node:path';
import type { InputItem } from '../../src/batch/discover-inputs.js';
import { watchInputs } from '../../src/batch/watch-inputs.js';

export function collectArrivals(work: string, watched: string, done: (item: InputItem, seen: string[]) => boolean) {
  const stop = new AbortController();
  let ready: () => void = () => {};
  const watching = new Promise<void>((resolve) => (ready = resolve));
  const arrivals = watchInputs([watched], stop.signal, {
    recursive: true,
    outputDir: join(work, 'out'),
    onReady: ready,
  });
  const seen: string[] = [];
  const collected = (async () => {
    for await (const item of arrivals) {
      seen.push(item.relativePath);
      if (done(item, seen)) stop.abort();
    }
    return seen;
  })();
  /** Resolves once the folder is watched: from then on no arrival is missed. */
  return { watching, collected, stop };
}
