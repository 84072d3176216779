// Every model run has a limit. A run that never answers (a hung GPU or kernel; here every run of the model waits
// on a closed inference gate, test/helpers/inference-gate.ts) fails its photo, and the CLI exits instead of
// waiting; `rmbg serve` says it is not ready until a fresh worker has answered a run.

import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { warmKeyModel } from '../helpers/fast-models.js';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { type InferenceGate, inferenceGate } from '../helpers/inference-gate.js';
import { startServe, type ServeProcess } from '../helpers/serve-harness.js';

let work: string;
let model: string;
let photo: string;
/** Closed for the whole file: every run, the engines' warm-up included, waits until the processes end. */
let hang: InferenceGate;

beforeAll(async () => {
  work = tempDir('rmbg-watchdog-');
  model = warmKeyModel();
  photo = path.join(work, 'disc.jpg');
  writeFileSync(photo, await jpegPhoto(160, 120));
  hang = inferenceGate();
  hang.close();
});
afterAll(() => {
  hang.open();
  hang.remove();
  removeTempDirs();
});

describe('a run past its limit', () => {
  it('rmbg remove: the photo fails saying so, nothing is written, and the CLI ends instead of waiting', async () => {
    const out = path.join(work, 'out');
    const result = await rmbg(
      ['remove', photo, '--local', '--model', model, '--device', 'cpu', '--run-timeout', '1', '-o', out, '--json'],
      // The run never ends: an exit only comes from the limit.
      { timeout: 90_000, env: hang.env, nodeArgs: hang.nodeArgs },
    );
    expect(result.timedOut).toBe(false);
    // Node cannot exit while a worker thread is stuck in native code: the CLI says so and ends itself.
    expect(result.signal, result.stderr).toBe('SIGKILL');
    expect(result.stderr).toContain(
      'rmbg: 1 model run(s) past the run time limit are still running; ending the process (SIGKILL)',
    );
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({
      status: 'failed',
      error: { code: 'processing_failed', message: expect.stringContaining('a run took longer than 1 s') },
    });
    expect(lines.at(-1)).toMatchObject({ summary: true, failed: 1, done: 0 });
    expect(existsSync(out) ? readdirSync(out).filter((name) => !name.startsWith('.rmbg')) : []).toEqual([]);
  });

  describe('rmbg serve', () => {
    let server: ServeProcess | undefined;
    afterAll(async () => {
      await server?.stop('SIGKILL');
    });

    it('/readyz answers 503 with Retry-After, and the log says why, once its warm-up run went past the limit', async () => {
      // The warm-up (one run before listening) is the first run past the processing timeout.
      server = await startServe(
        tempDir('rmbg-watchdog-serve-'),
        ['--model', model, '--device', 'cpu', '--processing-timeout', '2'],
        hang.env,
        hang.nodeArgs,
      );
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get('retry-after')).toBe('2');
      expect(((await ready.json()) as { errors: Array<{ code: string }> }).errors[0]?.code).toBe('service_unavailable');
      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);
    });
  });
});
