// Shared by the bench scripts: where things are, the model-input tensor of an image, and small statistics.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const MODELS_DIR = join(ROOT, 'models');

/** The ISNet input for a file (absolute, or relative to the repo), prepared as the engine does (1024² fill resize, white under alpha, (v-128)/256, CHW). */
export async function modelInputTensor(file, size = 1024) {
  const { data } = await sharp(resolve(ROOT, file))
    .rotate()
    .resize(size, size, { fit: 'fill' })
    .flatten({ background: '#ffffff' })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const pixels = size * size;
  const tensor = new Float32Array(pixels * 3);
  for (let c = 0; c < 3; c++) for (let i = 0; i < pixels; i++) tensor[c * pixels + i] = (data[i * 3 + c] - 128) / 256;
  return tensor;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
