// A tiny but valid ONNX model (one Identity node): onnxruntime loads it and runs it in microseconds. With the
// output named like the manifest's ("output") every inference succeeds, the input's first plane as the mask,
// so a served request costs parsing, sharp, the store and HTTP, not inference (bench/store-overhead.mjs, the
// multi-server tests); named otherwise, every inference fails inside the engine, which the API reports as 502
// (test/fixtures/onnx-writer.ts re-exports this for the tests, and builds its other test models from the
// protobuf helpers below).
import { writeFileSync } from 'node:fs';

export function varint(value) {
  const bytes = [];
  let rest = value;
  while (rest > 0x7f) {
    bytes.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

export const int = (field, value) => Buffer.concat([varint(field << 3), varint(value)]);
export const bytes = (field, value) => {
  const data = typeof value === 'string' ? Buffer.from(value) : value;
  return Buffer.concat([varint((field << 3) | 2), varint(data.length), data]);
};

/** ValueInfoProto of a float tensor of the given shape. */
export function tensorInfo(name, shape) {
  const dims = Buffer.concat(shape.map((size) => bytes(1, int(1, size))));
  const tensorType = Buffer.concat([int(1, 1 /* FLOAT */), bytes(2, dims)]);
  return Buffer.concat([bytes(1, name), bytes(2, bytes(1, tensorType))]);
}

/** A ModelProto (IR 8, opset 13) around a GraphProto. */
export function model(graph) {
  const opset = Buffer.concat([bytes(1, ''), int(2, 13)]);
  return Buffer.concat([int(1, 8 /* ir_version */), bytes(7, graph), bytes(8, opset)]);
}

export function writeIdentityModel(path, inputName = 'input', outputName = 'not_the_mask') {
  const shape = [1, 3, 1024, 1024];
  const node = Buffer.concat([bytes(1, inputName), bytes(2, outputName), bytes(4, 'Identity')]);
  const graph = Buffer.concat([bytes(1, node), bytes(2, 'identity'), bytes(11, tensorInfo(inputName, shape)), bytes(12, tensorInfo(outputName, shape))]);
  writeFileSync(path, model(graph));
}
