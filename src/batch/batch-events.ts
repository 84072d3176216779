// The batch as an async iterator; leaving the loop early cancels the files in flight and closes the journal.

import { runBatch, type BatchEvent, type BatchOptions } from './run-batch.js';

export async function* batchEvents(batch: Omit<BatchOptions, 'onEvent'>): AsyncGenerator<BatchEvent, void, undefined> {
  const pending: BatchEvent[] = [];
  let wake: (() => void) | undefined;
  let finished = false;
  let failure: { error: unknown } | undefined;
  const leave = new AbortController();
  const either = (signal: AbortSignal | undefined) => (signal ? AbortSignal.any([signal, leave.signal]) : leave.signal);

  const running = runBatch({
    ...batch,
    stop: either(batch.stop),
    abort: either(batch.abort),
    onEvent: (event) => {
      pending.push(event);
      wake?.();
    },
  }).then(
    () => undefined,
    (error: unknown) => {
      failure = { error };
    },
  );
  void running.finally(() => {
    finished = true;
    wake?.();
  });

  try {
    for (;;) {
      const event = pending.shift();
      if (event) yield event;
      else if (finished) break;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
    if (failure) throw failure.error;
  } finally {
    leave.abort();
    await running;
  }
}
