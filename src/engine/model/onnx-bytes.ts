// ONNX models written by hand (no onnx package in Node): the GPU probe's, and the tests' and benches' tiny ones.

function varint(value: number): Buffer {
  const out: number[] = [];
  let rest = value;
  while (rest > 0x7f) {
    out.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

/** A varint field. */
export const int = (field: number, value: number): Buffer => Buffer.concat([varint(field << 3), varint(value)]);

/** A length-delimited field (a string, bytes or a nested message). */
export function bytes(field: number, value: string | Buffer): Buffer {
  const data = typeof value === 'string' ? Buffer.from(value) : value;
  return Buffer.concat([varint((field << 3) | 2), varint(data.length), data]);
}

/** ValueInfoProto of a float tensor of the given shape. */
export function tensorInfo(name: string, shape: readonly number[]): Buffer {
  const dims = Buffer.concat(shape.map((size) => bytes(1, int(1, size))));
  const tensorType = Buffer.concat([int(1, 1 /* FLOAT */), bytes(2, dims)]);
  return Buffer.concat([bytes(1, name), bytes(2, bytes(1, tensorType))]);
}

/** A ModelProto (IR 8, opset 13) around a GraphProto. */
export function model(graph: Buffer): Buffer {
  const opset = Buffer.concat([bytes(1, ''), int(2, 13)]);
  return Buffer.concat([int(1, 8 /* ir_version */), bytes(7, graph), bytes(8, opset)]);
}

/** One Identity node from `inputName` to `outputName`, float tensors of `shape`. */
export function identityModel(shape: readonly number[], inputName: string, outputName: string): Buffer {
  const node = Buffer.concat([bytes(1, inputName), bytes(2, outputName), bytes(4, 'Identity')]);
  return model(
    Buffer.concat([
      bytes(1, node),
      bytes(2, 'identity'),
      bytes(11, tensorInfo(inputName, shape)),
      bytes(12, tensorInfo(outputName, shape)),
    ]),
  );
}

/** A FLOAT TensorProto initializer with raw_data. */
export function floatTensor(name: string, dims: number[], values: number[]): Buffer {
  const raw = Buffer.alloc(values.length * 4);
  for (const [i, v] of values.entries()) raw.writeFloatLE(v, i * 4);
  return Buffer.concat([...dims.map((d) => int(1, d)), int(2, 1), bytes(8, name), bytes(9, raw)]);
}

/**
 * The warm-key model, at the default model's contract (1×3×1024² 'input' → 'output'): a 1×1 convolution, mask =
 * (red − blue − 32) / 32, clamped to 0..1 by the pipeline. Warm pixels are kept, cool ones removed, in
 * milliseconds: the tests' stand-in where the real model's cut is not the point (test/helpers/fast-models.ts), and
 * the benches' model whose run costs next to nothing.
 */
export function warmKeyModelBytes(): Buffer {
  const node = Buffer.concat([bytes(1, 'input'), bytes(1, 'w'), bytes(1, 'b'), bytes(2, 'output'), bytes(4, 'Conv')]);
  const graph = Buffer.concat([
    bytes(1, node),
    bytes(2, 'warm_key'),
    // The input is pixel / 255 − 0.5 per channel, so 8·R − 8·B − 1 is (red − blue − 32) / 32 (to within 0.4 %).
    bytes(5, floatTensor('w', [1, 3, 1, 1], [8, 0, -8])),
    bytes(5, floatTensor('b', [1], [-1])),
    bytes(11, tensorInfo('input', [1, 3, 1024, 1024])),
    bytes(12, tensorInfo('output', [1, 1, 1024, 1024])),
  ]);
  return model(graph);
}
