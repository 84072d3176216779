// The GPU's first run (the blank run that compiles the shaders) is held to the run time limit (--run-timeout,
// `runTimeoutMs`), not to a fixed one: a slow adapter's first run of a big model may take minutes. The run is held
// in the model by the inference gate (test/helpers/inference-gate.ts) while the clock is moved on, so neither case
// waits for real time to pass.

import { afterEach, expect, it, vi } from 'vitest';
import { SOFTWARE_GPU_OPT_IN } from '../../../../src/api/device.js';
import { createEngine } from '../../../../src/engine/index.js';
import { warmKeyModel } from '../../../helpers/fast-models.js';
import { type InferenceGate, inferenceGate } from '../../../helpers/inference-gate.js';

// lavapipe is a software adapter: --device gpu runs on it only with the opt-in for tests.
process.env[SOFTWARE_GPU_OPT_IN] = '1';
const model = warmKeyModel();
let gate: InferenceGate | undefined;
afterEach(() => {
  gate?.open();
  gate?.remove();
  vi.useRealTimers();
});

/** createEngine on the GPU with its first run held in the model until the clock has moved on `heldForMs`. */
async function firstRunHeld(runTimeoutMs: number, heldForMs: number) {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'], shouldAdvanceTime: true });
  const held = inferenceGate(); // a fresh one: its `held` means this engine's first run
  gate = held;
  held.close();
  const engine = held.whileStarting(() => createEngine({ model, device: 'gpu', graphCache: false, runTimeoutMs }));
  engine.catch(() => undefined);
  await held.held();
  await vi.advanceTimersByTimeAsync(heldForMs);
  held.open();
  return engine;
}

it('fails device gpu when the first run outlives a small --run-timeout, naming the limit', async () => {
  await expect(firstRunHeld(2_000, 2_500)).rejects.toMatchObject({
    code: 'device_unavailable',
    message: expect.stringContaining('the first run on the GPU did not finish within the run time limit (2 s)'),
  });
});

it('lets the first run take longer than a minute when --run-timeout allows it', async () => {
  const engine = await firstRunHeld(600_000, 90_000);
  try {
    expect(engine.device).toMatchObject({ requested: 'gpu', device: 'gpu' });
  } finally {
    await engine.close();
  }
});
