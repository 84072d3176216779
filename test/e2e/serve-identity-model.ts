// The tiny identity ONNX model of the serve tests: one Identity node. Named like the manifest's output
// (writeIdentityModel(path, 'input', 'output')) every inference succeeds; by default every inference fails
// inside the engine, which the API reports as 502. One implementation, shared with the benchmarks.

export { writeIdentityModel } from '../../bench/lib/identity-model.mjs';
