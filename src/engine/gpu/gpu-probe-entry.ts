// The GPU probe's child (gpu-probe.ts): its own process, so Dawn's stderr and its adapter choice stay in it.

import { identityModel } from '../model/onnx-bytes.js';

const shape = [1, 4];
try {
  const ort = await import('onnxruntime-node');
  const session = await ort.InferenceSession.create(identityModel(shape, 'x', 'y'), {
    executionProviders: ['webgpu'],
    logSeverityLevel: 3,
  });
  const input = new ort.Tensor('float32', Float32Array.from([1, 2, 3, 4]), shape);
  const output = (await session.run({ x: input })).y?.data as Float32Array | undefined;
  const agrees = output !== undefined && [1, 2, 3, 4].every((value, i) => output[i] === value);
  process.stdout.write(
    `${JSON.stringify(agrees ? { ok: true } : { ok: false, error: `the GPU returned ${JSON.stringify(Array.from(output ?? []))} for [1,2,3,4]` })}\n`,
  );
  await session.release();
} catch (error) {
  process.stdout.write(
    `${JSON.stringify({ ok: false, error: error instanceof Error ? error.message : String(error) })}\n`,
  );
}
