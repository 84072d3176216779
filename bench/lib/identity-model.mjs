// A tiny valid ONNX model (one Identity node, output named like the manifest's "output"): the engine runs
// it in microseconds, so a served request costs parsing, sharp, the store and HTTP, not inference. The same
// bytes as test/e2e/serve-identity-model.ts (which the bench cannot import: it is TypeScript under test/).
import { writeFileSync } from 'node:fs';

function varint(value) {
  const bytes = [];
  let rest = value;
  while (rest > 0x7f) {
    bytes.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}
const int = (field, value) => Buffer.concat([varint(field << 3), varint(value)]);
const bytes = (field, value) => {
  const data = typeof value === 'string' ? Buffer.from(value) : value;
  return Buffer.concat([varint((field << 3) | 2), varint(data.length), data]);
};
function tensorInfo(name, shape) {
  const dims = Buffer.concat(shape.map((size) => bytes(1, int(1, size))));
  return Buffer.concat([bytes(1, name), bytes(2, bytes(1, Buffer.concat([int(1, 1), bytes(2, dims)])))]);
}

export function writeIdentityModel(path) {
  const shape = [1, 3, 1024, 1024];
  const node = Buffer.concat([bytes(1, 'input'), bytes(2, 'output'), bytes(4, 'Identity')]);
  const graph = Buffer.concat([bytes(1, node), bytes(2, 'identity'), bytes(11, tensorInfo('input', shape)), bytes(12, tensorInfo('output', shape))]);
  writeFileSync(path, Buffer.concat([int(1, 8), bytes(7, graph), bytes(8, Buffer.concat([bytes(1, ''), int(2, 13)]))]));
}
