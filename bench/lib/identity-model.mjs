// A tiny but valid ONNX model (one Identity node): onnxruntime loads it and runs it in microseconds. With the
// output named like the manifest's ("output") every inference succeeds, the input's first plane as the mask,
// so a served request costs parsing, sharp, the store and HTTP, not inference (bench/store-overhead.mjs, the
// multi-server tests); named otherwise, every inference fails inside the engine, which the API reports as 502.
// The protobuf helpers are rmbg's own (src/engine/model/onnx-bytes.ts, built into dist/ by npm ci); the tests build
// their other models from them too (test/helpers/onnx-writer.ts).
import { writeFileSync } from 'node:fs';
import { identityModel } from '../../dist/engine/model/onnx-bytes.js';

export { bytes, int, model, tensorInfo } from '../../dist/engine/model/onnx-bytes.js';

export function writeIdentityModel(path, inputName = 'input', outputName = 'not_the_mask') {
  writeFileSync(path, identityModel([1, 3, 1024, 1024], inputName, outputName));
}
