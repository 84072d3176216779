// src/engine/model/onnx-fp32.ts, which derives the default model on first use: on a miniature of IMG.LY's fp16 ISNet
// (Cast → fp16 Conv → Cast, plus a side output) the fp32 copy has no Cast and no FLOAT16 left, only `output`,
// gives the same numbers as the fp16 graph, and the same bytes every time.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFp16ConvModel } from '../../../helpers/onnx-writer.js';
import { removeTempDirs, tempDir } from '../../../helpers/cli.js';
import { convertToFp32 } from '../../../../src/engine/model/onnx-fp32.js';

afterAll(removeTempDirs);

const run = async (model: Buffer | string, input: Float32Array) => {
  const session = await ort.InferenceSession.create(model as string);
  try {
    const out = await session.run({ input: new ort.Tensor('float32', input, [1, 3, 4, 4]) }, ['output']);
    return { outputs: session.outputNames, data: Array.from(out.output?.data as Float32Array) };
  } finally {
    await session.release();
  }
};

describe('convertToFp32', () => {
  it('drops the Casts, the FLOAT16 weights and the unread outputs; same result, same bytes each time', async () => {
    const file = path.join(tempDir(), 'fp16.onnx');
    writeFp16ConvModel(file);
    const source = readFileSync(file);
    const { bytes, stats } = convertToFp32(source, { keepOutputs: ['output'], sourceSha256: 'abc' });
    expect(stats).toMatchObject({
      nodesBefore: 5,
      nodes: 1,
      castsRemoved: 3,
      convertedInitializers: 2,
      initializers: 2,
    });
    expect(bytes.includes(Buffer.from('Cast'))).toBe(false);
    expect(bytes.includes(Buffer.from('side'))).toBe(false);
    expect(convertToFp32(source, { keepOutputs: ['output'], sourceSha256: 'abc' }).bytes.equals(bytes)).toBe(true);

    // Inputs exactly representable in fp16, so both graphs compute the same numbers: r + g/2 − b/4 + 1/4.
    const input = Float32Array.from({ length: 48 }, (_, i) => ((i % 16) - 8) / 8);
    const fp16 = await run(file, input);
    const fp32 = await run(bytes as unknown as string, input);
    expect(fp16.outputs).toEqual(['output', 'side']);
    expect(fp32.outputs).toEqual(['output']);
    expect(fp32.data).toEqual(fp16.data);
    expect(fp32.data[0]).toBe(-1 + -0.5 + 0.25 + 0.25);
  });

  it('refuses to keep an output the graph does not have', () => {
    const file = path.join(tempDir(), 'fp16.onnx');
    writeFp16ConvModel(file);
    expect(() => convertToFp32(readFileSync(file), { keepOutputs: ['mask'] })).toThrow(
      'the graph lacks output(s) mask',
    );
  });
});
