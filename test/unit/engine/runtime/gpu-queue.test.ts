// The process's one GPU queue: two sessions' GPU work never overlaps (two WebGPU sessions working at once crash
// the process), while one session's runs may wait in its worker behind the one in the model.

import { describe, expect, it } from 'vitest';
import { gpuTurn } from '../../../../src/engine/runtime/gpu-queue.js';

/**
 * A scenario: works asked for in groups (a drain after each group), each "name:owner:upTo" (owner a, b, or - for
 * none, as loads and releases are asked; a name ending in ! fails as soon as it starts); then, step by step, the
 * work the test ends (or none) and what the log gains by the next drain.
 */
interface Scenario {
  name: string;
  asks: string[][];
  steps: [ends: string | null, logged: string[]][];
}

const SCENARIOS: Scenario[] = [
  {
    name: "keeps another owner's work until every work of the turn before it has settled",
    asks: [['a1:a:2'], ['a2:a:2', 'b1:b:2']],
    steps: [
      [null, ['a1 starts', 'a2 starts']],
      ['a1', ['a1 ends']],
      ['a2', ['a2 ends', 'b1 starts']],
      ['b1', ['b1 ends']],
    ],
  },
  {
    name: "holds an owner's works beyond upTo until one of its works settles",
    asks: [['a1:a:2'], ['a2:a:2', 'a3:a:2']],
    steps: [
      [null, ['a1 starts', 'a2 starts']],
      ['a1', ['a1 ends', 'a3 starts']],
      ['a2', ['a2 ends']],
      ['a3', ['a3 ends']],
    ],
  },
  {
    name: 'queues an owner behind another owner that asked meanwhile, so no owner keeps the GPU',
    asks: [['a1:a:2'], ['b1:b:2', 'a2:a:2']],
    steps: [
      [null, ['a1 starts']],
      ['a1', ['a1 ends', 'b1 starts']],
      ['b1', ['b1 ends', 'a2 starts']],
      ['a2', ['a2 ends']],
    ],
  },
  {
    name: "keeps another owner's work behind a turn whose joined work failed until the rest of the turn settles",
    asks: [['a1:a:2'], ['x!:a:2', 'b1:b:2']],
    steps: [
      [null, ['a1 starts', 'x! fails']],
      ['a1', ['a1 ends', 'b1 starts']],
      ['b1', ['b1 ends']],
    ],
  },
  {
    name: "lets an owner's works share a turn queued behind another owner's only once it has begun",
    asks: [['a1:a:2'], ['b1:b:2', 'a2:a:2', 'a3:a:2']],
    steps: [
      [null, ['a1 starts']],
      ['a1', ['a1 ends', 'b1 starts']],
      ['b1', ['b1 ends', 'a2 starts', 'a3 starts']],
      ['a2', ['a2 ends']],
      ['a3', ['a3 ends']],
    ],
  },
  {
    name: 'lets no work share a turn where upTo is 1 (behind a worker set aside)',
    asks: [['a1:a:2'], ['a2:a:1']],
    steps: [
      [null, ['a1 starts']],
      ['a1', ['a1 ends', 'a2 starts']],
      ['a2', ['a2 ends']],
    ],
  },
  {
    name: 'runs work without an owner (a load, a release) alone, and a failed work does not stop the queue',
    asks: [['x!:a:2', 'load:-:1', 'a1:a:2']],
    steps: [
      [null, ['x! fails', 'load starts']],
      ['load', ['load ends', 'a1 starts']],
      ['a1', ['a1 ends']],
    ],
  },
];

/** Lets every promise callback that can run, run. */
const drain = () => new Promise((resolve) => setImmediate(resolve));

describe('the GPU queue', { timeout: 5_000 }, () => {
  it.each(SCENARIOS)('$name', async ({ asks, steps }) => {
    const log: string[] = [];
    const owners: Record<string, object> = { a: {}, b: {} };
    const ends = new Map<string, () => void>();
    const settled: Promise<unknown>[] = [];
    for (const group of asks) {
      for (const ask of group) {
        const [name = '', owner = '-', upTo = '1'] = ask.split(':');
        const work = () => {
          if (name.endsWith('!')) {
            log.push(`${name} fails`);
            return Promise.reject(new Error('a lost device'));
          }
          log.push(`${name} starts`);
          return new Promise<void>((resolve) => ends.set(name, resolve)).then(() => log.push(`${name} ends`));
        };
        const sharing = owner === '-' ? undefined : { owner: owners[owner] as object, upTo: Number(upTo) };
        settled.push(gpuTurn(work, sharing).catch((error: Error) => expect(error.message).toBe('a lost device')));
      }
      await drain();
    }
    const expected: string[] = [];
    for (const [end, logged] of steps) {
      if (end) ends.get(end)?.();
      await drain();
      expected.push(...logged);
      expect(log).toEqual(expected);
    }
    await Promise.all(settled);
  });
});
