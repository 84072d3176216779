// One queue for the process's GPU work: two WebGPU sessions working at once crash it
// (bench/RESULTS.md, "Issue #19: the GPU"). A session's runs may share its turn: its worker takes them one after
// another, so the GPU goes on to the next run without waiting for the main thread to take the last one's answer.

/** A turn in the queue: whose it is, whether it has begun, its works unsettled, and its works waiting for a slot. */
interface Turn {
  owner: object | undefined;
  begun: boolean;
  active: number;
  waiting: (() => void)[];
}

/** How one owner's works share a turn: at most `upTo` of them unsettled at once. */
export interface TurnSharing {
  owner: object;
  upTo: number;
}

/** The tail keeps no work's value: a turn that joins works for hours would keep every run's mask otherwise. */
const settled = (): void => undefined;
let tail: Promise<void> = Promise.resolve();
let last: Turn = { owner: undefined, begun: true, active: 0, waiting: [] };

/**
 * Runs `work` once the GPU work queued before it has settled; work queued after it waits for it. With `sharing`,
 * work of an owner whose turn is the last one queued joins that turn (as soon as fewer than `upTo` of its works are
 * unsettled) instead of waiting for it to end; another owner's work queued meanwhile ends the joining, so no owner
 * keeps the GPU from the others.
 */
export function gpuTurn<T>(work: () => Promise<T>, sharing?: TurnSharing): Promise<T> {
  if (sharing && last.owner === sharing.owner && last.begun) return join(last, work, sharing.upTo);
  const turn: Turn = { owner: sharing?.owner, begun: false, active: 1, waiting: [] };
  const queued = tail.then(() => {
    turn.begun = true;
    return work();
  });
  tail = queued.finally(() => leave(turn)).then(settled, settled);
  last = turn;
  return queued;
}

/** `work` in `turn`, at once or when one of its `upTo` slots frees; the queue's tail waits for it too. */
function join<T>(turn: Turn, work: () => Promise<T>, upTo: number): Promise<T> {
  const slot = new Promise<void>((start) => {
    if (turn.active < upTo) start();
    else turn.waiting.push(start);
  });
  const joined = slot.then(work);
  turn.active++;
  // Neither part rejects: the next owner's work waits for both to settle.
  tail = Promise.all([tail, joined.finally(() => leave(turn)).then(settled, settled)]).then(settled);
  return joined;
}

/** A work of `turn` has settled: the next one waiting for a slot starts. */
function leave(turn: Turn): void {
  turn.active--;
  turn.waiting.shift()?.();
}
