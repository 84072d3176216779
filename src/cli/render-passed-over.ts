// What a folder walk passed over, in words for a person: the files rmbg does not read, counted by extension, and
// the RAW+JPEG pairs of which one was processed. The summary (render-progress.ts) and --dry-run say the same.

import type { PassedOver } from '../batch/discover-inputs.js';

const PAIR_NOTE = {
  raw: 'the RAW of each processed, its JPEG left (--raw-pairs jpeg or both to change it)',
  jpeg: 'the JPEG of each processed, its RAW left (--raw-pairs raw or both to change it)',
  both: 'both processed, their outputs named apart (IMG_0001.CR2.png, IMG_0001.JPG.png)',
} as const;

export function passedOverLines({ ignored, rawPairs }: PassedOver): string[] {
  const lines: string[] = [];
  if (ignored) {
    const counts = Object.entries(ignored.byExtension).map(([extension, n]) => `${extension} ${n}`);
    lines.push(
      `skipped ${ignored.count} file${ignored.count === 1 ? '' : 's'} rmbg does not read: ${counts.join(', ')}`,
    );
  }
  if (rawPairs) {
    lines.push(
      `${rawPairs.count} RAW+JPEG pair${rawPairs.count === 1 ? '' : 's'} of one shot: ${PAIR_NOTE[rawPairs.processed]}`,
    );
  }
  return lines;
}
