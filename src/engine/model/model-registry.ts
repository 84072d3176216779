// Which model file --model NAME|PATH means (manifest, the user's models, a path) and whether its weights are intact.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RmbgError } from '../../api/errors.js';
import { type BuiltInModel, builtInModelPath, cannotMake, makeBuiltInModel } from './built-in-weights.js';
import { catalogue, catalogueModel, pullCommand, pullTerms } from './catalogue.js';
import type { ModelContract } from './model-contract.js';
import { readUserModels } from './user-models.js';
import { fileMatches } from './weight-check.js';

export interface ModelEntry extends ModelContract, BuiltInModel {
  description: string;
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
  /** A manifest model: made on first use (built-in-weights.ts) when its file is missing. */
  builtIn?: ModelEntry;
}

/** --model NAME|PATH: a manifest name, a user model (`userModelsDir`), or an .onnx path with the default's contract. */
export function resolveModel(nameOrPath?: string, userModelsDir?: string): ResolvedModel {
  const manifest = readManifest();
  const wanted = nameOrPath ?? manifest.default;
  const entry = manifest.models.find((m) => m.name === wanted);
  if (entry) {
    const path = builtInModelPath(MODELS_DIR, entry);
    const fix = `delete it and run again: rmbg makes it anew from ${entry.source.package}@${entry.source.version}`;
    return { name: entry.name, contract: entry, path, expected: entry, fix, builtIn: entry };
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
  const pullable = catalogueModel(wanted);
  if (pullable)
    throw new RmbgError(
      'model_not_pulled',
      `model ${wanted} is in rmbg's catalogue but not pulled yet (${pullTerms(pullable)}); run: ${pullCommand(pullable)}`,
    );
  if (wanted.endsWith('.onnx') || wanted.includes('/')) {
    const path = resolve(wanted);
    if (!existsSync(path)) throw new RmbgError('model_unavailable', `model file ${path} does not exist`);
    const base = manifest.models.find((m) => m.name === manifest.default) as ModelEntry;
    return { name: path, contract: base, path, fix: 'check the path' };
  }
  const known = [...manifest.models, ...userModels].map((m) => m.name).join(', ');
  const pullableNames = catalogue()
    .map((m) => m.name)
    .join(', ');
  throw new RmbgError(
    'usage_error',
    `unknown model '${wanted}'; known models: ${known}; to pull with 'rmbg models pull NAME': ${pullableNames}; ` +
      `or a path to an .onnx file (add your own with 'rmbg models add NAME FILE --preset …')`,
  );
}

/** A built-in model's missing file made now (its first use); nothing for others or a file already there. */
export async function provideWeights(model: ResolvedModel): Promise<void> {
  if (model.builtIn && !existsSync(model.path))
    await makeBuiltInModel(model.path, model.builtIn, readManifest().models);
}

/** `first-use`: a built-in model not made yet, which its first use makes (its data package is installed). */
export type WeightStatus = 'verified' | 'first-use' | 'missing' | 'corrupt' | 'unchecked';

export async function checkWeights(model: ResolvedModel): Promise<WeightStatus> {
  if (!existsSync(model.path)) return model.builtIn && !cannotMake(model.builtIn) ? 'first-use' : 'missing';
  if (!model.expected) return 'unchecked';
  return (await fileMatches(model.path, model.expected.bytes, model.expected.sha256)) ? 'verified' : 'corrupt';
}

/** Throws a message that says how to fix it when the weights are missing or do not match the manifest. */
export async function verifyWeights(model: ResolvedModel): Promise<void> {
  const status = await checkWeights(model);
  if (status === 'verified' || status === 'unchecked') return;
  if (status === 'missing' && model.builtIn)
    throw new RmbgError('model_unavailable', `model ${model.name} cannot be made: ${cannotMake(model.builtIn)}`);
  if (status === 'missing' || status === 'first-use')
    throw new RmbgError('model_unavailable', `model ${model.name} is not installed at ${model.path}; ${model.fix}`);
  throw new RmbgError(
    'model_unavailable',
    `model ${model.name} at ${model.path} does not match its recorded sha256 (corrupt, partial or changed); ${model.fix}`,
  );
}
