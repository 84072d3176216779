// ONNX models written by hand (no onnx package in Node): the GPU probe's, and the tests' tiny ones.

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
