// A library call rejects as soon as its signal aborts, as fetch() and timers do, whatever the work is waiting
// on (reading a Blob, the model loading, its turn at the session). The engine only notices the abort at its
// next stage; that work is left to wind down on its own and its outcome is dropped.

export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
