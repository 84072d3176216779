// ORT's optimised graph kept between runs, since optimising is most of a session's start-up
// (bench/RESULTS.md, "Issue #9: fp32 graph, start-up, memory"); named by model, ORT version, provider and CPU.

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { arch, cpus } from 'node:os';
import { basename, join } from 'node:path';
import envPaths from 'env-paths';
import { processAlive } from '../../platform/process-alive.js';

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
  // What earlier versions of rmbg wrote and nothing reads: the graph as ONNX, and without the provider in its name.
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
