// ORT's optimised graph, kept between runs: creating a session optimises the graph (constant folding, fusions,
// the NCHWc layout for this CPU), which is most of the session's start-up. The first session saves the result
// under the user's cache folder, in ORT's own format (a flatbuffer: ORT can use its bytes in place, where an ONNX
// protobuf is parsed and its weights copied); later ones load it with optimisation off. The file is specific to the model
// (its sha256), the onnxruntime version, the execution provider and this CPU, so all four are in its name; it is written under a
// temporary name and renamed only once ORT finished writing it, so a crash never leaves a half file to load.

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { arch, cpus } from 'node:os';
import { basename, join } from 'node:path';
import envPaths from 'env-paths';
import { processAlive } from '../platform/process-alive.js';

export const DEFAULT_GRAPH_CACHE_DIR = join(envPaths('rmbg', { suffix: '' }).cache, 'graphs');

export interface CachedGraph {
  /** Load this file with graph optimisation disabled. */
  cached?: string;
  /** Or optimise the original and let ORT write the result here, then call `commit`. */
  saveTo?: string;
  commit(): void;
  /** Drops what ORT wrote (the weights failed their check). */
  discard(): void;
}

/** Where the optimised graph of a model with this sha256 is (or will be), for this ORT, provider and CPU. */
export function cachedGraph(dir: string, modelSha256: string, ortVersion: string, provider: string): CachedGraph {
  const cpu = createHash('sha256')
    .update(`${arch()} ${cpus()[0]?.model ?? ''}`)
    .digest('hex')
    .slice(0, 8);
  const unkeyed = `${modelSha256.slice(0, 16)}-ort${ortVersion}-${cpu}`;
  const stem = `${modelSha256.slice(0, 16)}-ort${ortVersion}-${provider}-${cpu}`;
  const file = join(dir, `${stem}.ort`);
  const none = { commit: () => undefined, discard: () => undefined };
  if (existsSync(file)) return { cached: file, ...none };
  const temp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dir, { recursive: true });
  } catch {
    return none; // no cache folder: optimise at each start, as without the cache
  }
  removeAbandoned(dir, basename(file));
  // Files of earlier versions of rmbg that nothing reads any more (176 MB each): the graph as ONNX, and the
  // graph under a name without its provider.
  for (const old of [`${unkeyed}.onnx`, `${unkeyed}.ort`]) rmSync(join(dir, old), { force: true });
  return {
    saveTo: temp,
    commit: () => {
      try {
        renameSync(temp, file);
      } catch {
        rmSync(temp, { force: true });
      }
    },
    discard: () => rmSync(temp, { force: true }),
  };
}

/** Forgets a cached graph ORT could not load (another tool wrote it, or the disk lost it). */
export function dropCachedGraph(file: string): void {
  rmSync(file, { force: true });
}

/** Half-written graphs (`<file>.<pid>.tmp`) of processes that died while ORT wrote them: 176 MB each. */
function removeAbandoned(dir: string, file: string): void {
  for (const name of readdirSync(dir)) {
    const match = name.startsWith(`${file}.`) ? /\.(\d+)\.tmp$/.exec(name) : null;
    if (match && !processAlive(Number(match[1]))) rmSync(join(dir, name), { force: true });
  }
}
