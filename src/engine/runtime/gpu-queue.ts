// One queue for the process's GPU work: two WebGPU sessions working at once crash it
// (bench/RESULTS.md, "Issue #19: the GPU"). A session's runs may share its turn: its worker takes them one after
// another, so the GPU goes on to the next run without waiting for the main thread to take the last one's answer.

/** A turn in the queue: whose it is, whether it has begun, its works running, and its works waiting for a slot (each
 * with the most works that may run beside it). */
interface Turn {
  owner: object | undefined;
  begun: boolean;
  running: number;
  waiting: { upTo: number; start: () => void }[];
}

/** How one owner's works share a turn: at most `upTo` of them running at once. */
export interface TurnSharing {
  owner: object;
  upTo: number;
}

/** The tail keeps no work's value: a turn that joins works for hours would keep every run's mask otherwise. */
const settled = (): void => undefined;
/** Settles once every work queued so far has settled; never rejects. */
let tail: Promise<void> = Promise.resolve();
/** The queue's last turn; an idle one once that turn has no work left (so no owner is kept alive by it). */
const IDLE: Turn = { owner: undefined, begun: true, running: 0, waiting: [] };
let last = IDLE;

/**
 * Runs `work` once the GPU work queued before it has settled; work queued after it waits for it. With `sharing`,
 * work of the owner of the last turn queued joins that turn, running beside its other works (at most `upTo` at
 * once) once the turn has begun; another owner's work queued meanwhile starts a turn of its own, so no owner keeps
 * the GPU from the others.
 */
export function gpuTurn<T>(work: () => Promise<T>, sharing?: TurnSharing): Promise<T> {
  if (!sharing || last.owner !== sharing.owner) {
    const turn: Turn = { owner: sharing?.owner, begun: false, running: 0, waiting: [] };
    tail = tail.then(() => {
      turn.begun = true;
      admit(turn);
    });
    last = turn;
  }
  return join(last, work, sharing?.upTo ?? 1);
}

/** `work` in `turn`, once the turn has begun and a slot is free; the queue's tail waits for it too. */
function join<T>(turn: Turn, work: () => Promise<T>, upTo: number): Promise<T> {
  const slot = new Promise<void>((start) => turn.waiting.push({ upTo, start }));
  admit(turn);
  const joined = slot.then(work);
  // Neither part rejects: the next turn waits for both to settle.
  tail = Promise.all([tail, joined.finally(() => leave(turn)).then(settled, settled)]).then(settled);
  return joined;
}

/** Starts the turn's waiting works, in order, while the first one's slot is free. */
function admit(turn: Turn): void {
  while (turn.begun && turn.waiting.length > 0 && turn.running < (turn.waiting[0]?.upTo ?? 1)) {
    turn.running++;
    turn.waiting.shift()?.start();
  }
}

/** A work of `turn` has settled: the next ones waiting start. */
function leave(turn: Turn): void {
  turn.running--;
  admit(turn);
  if (turn.running === 0 && turn.waiting.length === 0 && last === turn) last = IDLE;
}
