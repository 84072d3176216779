// `rmbg serve` stopped while it is still starting (issue #46): its SIGTERM handler is in place before the model
// loads, so a stop during a long load (minutes for a large model on a busy machine) ends it at once, exit 0, rather
// than waiting out the load (in a container, whose PID 1 ignores a SIGTERM it has no handler for, `docker stop`
// waited out its whole grace period). The start is held in the model's warm-up run by the inference gate.

import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { inferenceGate } from '../helpers/inference-gate.js';
import { writeIdentityModel } from '../helpers/onnx-writer.js';

const gate = inferenceGate();
afterAll(() => {
  gate.open();
  gate.remove();
  removeTempDirs();
});

it('SIGTERM while the model is still loading: it exits at once, 0, saying so, never having listened', async () => {
  const dataDir = tempDir();
  const model = path.join(dataDir, 'identity.onnx');
  writeIdentityModel(model, 'input', 'output');
  gate.close(); // the warm-up run, the last step of the start, waits in the model
  const server = rmbg(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--model', model], {
    nodeArgs: gate.nodeArgs,
    env: gate.env,
  });
  await gate.held();
  server.kill('SIGTERM');
  const result = await server;
  expect(result.exitCode, result.stderr).toBe(0);
  expect(result.stderr).toContain('rmbg: SIGTERM while starting; exiting');
  expect(result.stdout).not.toContain('listening on');
});
