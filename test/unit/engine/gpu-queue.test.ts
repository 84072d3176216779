// The process's one GPU queue: two sessions' GPU work never overlaps (two WebGPU sessions working at once crash
// the process), while one session's runs may wait in its worker behind the one in the model.

import { describe, expect, it } from 'vitest';
import { gpuTurn } from '../../../src/engine/gpu/gpu-queue.js';

/** A piece of GPU work that the test ends: whether it has started, and `end()` to settle it. */
function work(name: string, log: string[]) {
  let end: () => void = () => undefined;
  const settled = new Promise<void>((resolve) => (end = resolve));
  return {
    run: () => {
      log.push(`${name} starts`);
      return settled.then(() => log.push(`${name} ends`));
    },
    end: () => end(),
  };
}

/** Lets every promise callback that can run, run. */
const drain = () => new Promise((resolve) => setImmediate(resolve));

describe('the GPU queue', { timeout: 5_000 }, () => {
  it("keeps another owner's work until every work of the turn before it has settled", async () => {
    const log: string[] = [];
    const a = {};
    const b = {};
    const [a1, a2, b1] = [work('a1', log), work('a2', log), work('b1', log)];
    const done = [gpuTurn(a1.run, { owner: a, upTo: 2 })];
    await drain();
    done.push(gpuTurn(a2.run, { owner: a, upTo: 2 }), gpuTurn(b1.run, { owner: b, upTo: 2 }));
    await drain();
    expect(log).toEqual(['a1 starts', 'a2 starts']);
    a1.end();
    await drain();
    expect(log).toEqual(['a1 starts', 'a2 starts', 'a1 ends']);
    a2.end();
    await drain();
    expect(log).toEqual(['a1 starts', 'a2 starts', 'a1 ends', 'a2 ends', 'b1 starts']);
    b1.end();
    await Promise.all(done);
  });

  it("holds an owner's works beyond upTo until one of its works settles", async () => {
    const log: string[] = [];
    const a = {};
    const [a1, a2, a3] = [work('a1', log), work('a2', log), work('a3', log)];
    const done = [gpuTurn(a1.run, { owner: a, upTo: 2 })];
    await drain();
    done.push(gpuTurn(a2.run, { owner: a, upTo: 2 }), gpuTurn(a3.run, { owner: a, upTo: 2 }));
    await drain();
    expect(log).toEqual(['a1 starts', 'a2 starts']);
    a1.end();
    await drain();
    expect(log).toEqual(['a1 starts', 'a2 starts', 'a1 ends', 'a3 starts']);
    a2.end();
    a3.end();
    await Promise.all(done);
  });

  it('queues an owner behind another owner that asked meanwhile, so no owner keeps the GPU', async () => {
    const log: string[] = [];
    const a = {};
    const b = {};
    const [a1, b1, a2] = [work('a1', log), work('b1', log), work('a2', log)];
    const done = [gpuTurn(a1.run, { owner: a, upTo: 2 })];
    await drain();
    done.push(gpuTurn(b1.run, { owner: b, upTo: 2 }), gpuTurn(a2.run, { owner: a, upTo: 2 }));
    await drain();
    expect(log).toEqual(['a1 starts']);
    a1.end();
    await drain();
    expect(log).toEqual(['a1 starts', 'a1 ends', 'b1 starts']);
    b1.end();
    await drain();
    expect(log.slice(3)).toEqual(['b1 ends', 'a2 starts']);
    a2.end();
    await Promise.all(done);
  });

  it("keeps another owner's work behind a turn whose joined work failed until the rest of the turn settles", async () => {
    const log: string[] = [];
    const a = {};
    const b = {};
    const [a1, b1] = [work('a1', log), work('b1', log)];
    const done = [gpuTurn(a1.run, { owner: a, upTo: 2 })];
    await drain();
    const failed = gpuTurn(() => Promise.reject(new Error('a lost device')), { owner: a, upTo: 2 });
    done.push(gpuTurn(b1.run, { owner: b, upTo: 2 }));
    await expect(failed).rejects.toThrow('a lost device');
    await drain();
    expect(log).toEqual(['a1 starts']);
    a1.end();
    await drain();
    expect(log).toEqual(['a1 starts', 'a1 ends', 'b1 starts']);
    b1.end();
    await Promise.all(done);
  });

  it("never lets an owner's work join a turn that has not begun: it waits behind the other owner's", async () => {
    const log: string[] = [];
    const a = {};
    const b = {};
    const [a1, b1, a2, a3] = [work('a1', log), work('b1', log), work('a2', log), work('a3', log)];
    const done = [gpuTurn(a1.run, { owner: a, upTo: 2 })];
    await drain();
    // a2's turn is queued behind b1's: a3 may share it once it has begun, not before.
    done.push(...[b1, a2, a3].map((w, i) => gpuTurn(w.run, { owner: i === 0 ? b : a, upTo: 2 })));
    await drain();
    expect(log).toEqual(['a1 starts']);
    a1.end();
    await drain();
    expect(log).toEqual(['a1 starts', 'a1 ends', 'b1 starts']);
    b1.end();
    await drain();
    expect(log.slice(3)).toEqual(['b1 ends', 'a2 starts', 'a3 starts']);
    a2.end();
    a3.end();
    await Promise.all(done);
  });

  it('lets no work share a turn where upTo is 1 (behind a worker set aside)', async () => {
    const log: string[] = [];
    const a = {};
    const [a1, a2] = [work('a1', log), work('a2', log)];
    const done = [gpuTurn(a1.run, { owner: a, upTo: 2 })];
    await drain();
    done.push(gpuTurn(a2.run, { owner: a, upTo: 1 }));
    await drain();
    expect(log).toEqual(['a1 starts']);
    a1.end();
    await drain();
    expect(log).toEqual(['a1 starts', 'a1 ends', 'a2 starts']);
    a2.end();
    await Promise.all(done);
  });

  it('runs work without an owner (a load, a release) alone, and a failed work does not stop the queue', async () => {
    const log: string[] = [];
    const a = {};
    const [load, a1] = [work('load', log), work('a1', log)];
    const failed = gpuTurn(() => Promise.reject(new Error('a lost device')), { owner: a, upTo: 2 });
    const done = [gpuTurn(load.run), gpuTurn(a1.run, { owner: a, upTo: 2 })];
    await expect(failed).rejects.toThrow('a lost device');
    await drain();
    expect(log).toEqual(['load starts']);
    load.end();
    await drain();
    expect(log).toEqual(['load starts', 'load ends', 'a1 starts']);
    a1.end();
    await Promise.all(done);
  });
});
