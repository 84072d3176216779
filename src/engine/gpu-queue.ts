// One queue for every GPU operation of the process. onnxruntime's WebGPU provider shares one Dawn device
// between all sessions of a process, and two sessions working at once from two threads end the process
// ("Command encoding already finished", then a segmentation fault); runs of one session are serial anyway.

let tail: Promise<unknown> = Promise.resolve();

/** Runs `work` once every GPU operation queued before it has settled; nothing queued after it starts until it settles. */
export function gpuTurn<T>(work: () => Promise<T>): Promise<T> {
  const turn = tail.then(work);
  tail = turn.catch(() => undefined);
  return turn;
}
