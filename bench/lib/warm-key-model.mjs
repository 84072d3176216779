// The warm-key model (src/engine/model/onnx-bytes.ts `warmKeyModelBytes`, the tests' fast model): a 1×1 convolution
// at the default model's contract whose run costs next to nothing, so a folder run through it measures the pipeline
// around the model, its own ceiling: the bound any GPU would hit.
import { writeFileSync } from 'node:fs';
import { warmKeyModelBytes } from '../../dist/engine/model/onnx-bytes.js';

export function writeWarmKeyModel(file) {
  writeFileSync(file, warmKeyModelBytes());
  return file;
}
