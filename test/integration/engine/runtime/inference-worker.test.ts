// The worker-thread session (src/engine/inference-worker.ts) over real onnxruntime with tiny hand-written
// models: masks come back across the thread, errors come back as the same RmbgError codes, a dead worker
// fails its runs and is replaced, release ends the worker.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { RmbgError } from '../../../../src/api/errors.js';
import { WorkerSession } from '../../../../src/engine/runtime/inference-worker.js';
import type { ResolvedModel } from '../../../../src/engine/model/model-registry.js';
import { writeRedChannelModel, writeSlowModel } from '../../../helpers/onnx-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'rmbg-inference-worker-'));
const width = 4;
const height = 2;
const path = join(dir, 'red.onnx');
writeRedChannelModel(path, { width, height, bias: 0.25 });

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function redModel(overrides: Partial<ResolvedModel> = {}, output = 'mask'): ResolvedModel {
  const contract = {
    input: { name: 'pixels', shape: [1, 3, height, width] as [number, number, number, number] },
    output,
    normalization: { mean: [0, 0, 0] as [number, number, number], std: [1, 1, 1] as [number, number, number] },
  };
  return { name: 'red', contract, path, fix: 'none', ...overrides };
}

/** Red plane 0, 0.1, …, 0.7; green and blue ignored by the model. */
function tensor(): Float32Array {
  const input = new Float32Array(3 * width * height).fill(9);
  for (let i = 0; i < width * height; i++) input[i] = i / 10;
  return input;
}

async function rejection(promise: Promise<unknown>): Promise<RmbgError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(RmbgError);
  return error as RmbgError;
}

/** The session's current worker (private): only to kill it, as a crash would. */
const workerOf = (session: WorkerSession) => (session as unknown as { workerReady: Promise<Worker> }).workerReady;

describe('WorkerSession', () => {
  it('returns the mask the model computes, and moves the input to the worker instead of copying it', async () => {
    const session = await WorkerSession.load(redModel(), { graphCache: false });
    const input = tensor();
    const plane = await session.run(input);
    expect([plane.width, plane.height]).toEqual([width, height]);
    expect(Array.from(plane.data, (v) => Math.round(v * 100) / 100)).toEqual([
      0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95,
    ]);
    expect(input.length).toBe(0); // transferred: detached on this thread
    await session.release();
  });

  it('rejects a model that cannot load with model_unavailable and its reason', async () => {
    const garbage = join(dir, 'garbage.onnx');
    writeFileSync(garbage, 'not a model');
    const error = await rejection(WorkerSession.load(redModel({ path: garbage }), { graphCache: false }));
    expect(error.code).toBe('model_unavailable');
    expect(error.message).toContain(`cannot load model red from ${garbage}`);
  });

  it('rejects a run that fails inside onnxruntime with processing_failed, and runs the next one', async () => {
    const session = await WorkerSession.load(redModel({}, 'no-such-output'), { graphCache: false });
    const error = await rejection(session.run(tensor()));
    expect(error.code).toBe('processing_failed');
    expect(error.message).toContain('no-such-output');
    await session.release();
  });

  it('fails the runs of a worker that dies with processing_failed, and starts a new worker for the next run', async () => {
    const session = await WorkerSession.load(redModel(), { graphCache: false });
    const dead = await workerOf(session);
    const lost = session.run(tensor());
    void dead.terminate();
    const error = await rejection(lost);
    expect(error.code).toBe('processing_failed');
    expect(error.message).toContain('the inference worker stopped');

    const plane = await session.run(tensor());
    expect(plane.data[0]).toBeCloseTo(0.25);
    expect(await workerOf(session)).not.toBe(dead);
    await session.release();
  });

  it('sets aside a worker whose run outlives runTimeoutMs: that run fails, the next starts a new worker, the old one exits by itself', async () => {
    // 16 squarings of a 1024² matrix: seconds of work on this machine, against a limit of 100 ms.
    const slow = join(dir, 'slow.onnx');
    writeSlowModel(slow, 1024, 16);
    const contract = {
      input: { name: 'input', shape: [1, 1, 1024, 1024] as [number, number, number, number] },
      output: 'output',
      normalization: { mean: [0, 0, 0] as [number, number, number], std: [1, 1, 1] as [number, number, number] },
    };
    const session = await WorkerSession.load(
      { name: 'slow', contract, path: slow, fix: 'none' },
      { graphCache: false },
      Promise.resolve(),
      { runTimeoutMs: 100 },
    );
    const stuck = await workerOf(session);
    const exited = new Promise((resolve) => stuck.once('exit', resolve));
    const error = await rejection(session.run(new Float32Array(1024 * 1024).fill(1.0001)));
    expect(error.code).toBe('processing_failed');
    expect(error.message).toContain('the inference worker was set aside: a run took longer than 0.1 s');
    const next = session.run(new Float32Array(1024 * 1024)).catch((caught: unknown) => caught);
    expect(await workerOf(session)).not.toBe(stuck);
    expect(await exited).toBe(0);
    expect(await next).toBeInstanceOf(RmbgError);
    await session.release();
  });

  it('release waits for the run in flight, ends the worker, and later runs fail', async () => {
    const session = await WorkerSession.load(redModel(), { graphCache: false });
    const worker = await workerOf(session);
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    const inFlight = session.run(tensor());
    await session.release();
    expect((await inFlight).data[0]).toBeCloseTo(0.25);
    await exited;
    expect((await rejection(session.run(tensor()))).code).toBe('processing_failed');
  });
});
