// Machine output: one JSON object per file, then one summary object; for scripts and pipes.

import type { BatchEvent } from '../batch/batch-events.js';

export function jsonLinesRenderer(write: (line: string) => void = (line) => process.stdout.write(line)) {
  return (event: BatchEvent): void => {
    // The count of inputs is in the summary; a photo that landed (--watch) shows up as its file line.
    if (event.type === 'start' || event.type === 'arrived') return;
    if (event.type === 'file') {
      const { type: _type, ...file } = event;
      write(`${JSON.stringify(file)}\n`);
    } else {
      const { type: _type, ...summary } = event;
      write(`${JSON.stringify({ summary: true, ...summary })}\n`);
    }
  };
}
