/** Writes the tiny identity ONNX model to `path`; outputName 'output' makes every inference succeed, the default makes it fail. */
export function writeIdentityModel(path: string, inputName?: string, outputName?: string): void;
