// One queue for the process's GPU work: two WebGPU sessions working at once crash it
// (bench/RESULTS.md, "Issue #19: the GPU").

let tail: Promise<unknown> = Promise.resolve();

/** Runs `work` once the GPU work queued before it has settled; work queued after it waits for it. */
export function gpuTurn<T>(work: () => Promise<T>): Promise<T> {
  const turn = tail.then(work);
  tail = turn.catch(() => undefined);
  return turn;
}
