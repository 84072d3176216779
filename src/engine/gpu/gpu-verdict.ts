// Whether the GPU beats the CPU provider for a model on this machine, measured once by `auto` and remembered in
// the user's cache, so later starts pay neither the probe nor the measurement. A weak integrated GPU can be slower
// than the CPU provider; a verdict holds for one adapter, driver, onnxruntime and model, and a change of any of
// them measures again.

import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import envPaths from 'env-paths';
import type { GpuEnvironment } from './gpu-environment.js';
import type { ResolvedModel } from '../model/model-registry.js';

export interface GpuVerdict {
  device: 'gpu' | 'cpu';
  /** One run on a blank input after the first (shaders compiled, graph warm), in milliseconds. */
  gpuMs: number;
  cpuMs: number;
  /** When it was measured (ISO 8601). */
  at: string;
}

/** The user's cache folder (XDG_CACHE_HOME on Linux), beside the graph cache. */
export function verdictFile(): string {
  return join(envPaths('rmbg', { suffix: '' }).cache, 'gpu-verdicts.json');
}

function fileStamp(path: string): string {
  try {
    const stat = statSync(path);
    return `${stat.size}:${Math.round(stat.mtimeMs)}`;
  } catch {
    return 'missing';
  }
}

/** What a verdict holds for: the GPU devices and their vendors, the drivers (each manifest's stamp), the loader,
 * onnxruntime's version and the model's weights. */
export function verdictKey(environment: GpuEnvironment, model: ResolvedModel): string {
  const ort = (createRequire(import.meta.url)('onnxruntime-node/package.json') as { version: string }).version;
  return JSON.stringify({
    platform: environment.platform,
    devices: environment.devices,
    drivers: environment.drivers.map((driver) => `${driver.path}@${fileStamp(driver.path)}`),
    loader: environment.loaderVersion ?? null,
    onnxruntime: ort,
    model: model.expected?.sha256 ?? `${model.path}@${fileStamp(model.path)}`,
  });
}

function readAll(file: string): Record<string, GpuVerdict> {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, GpuVerdict>;
  } catch {
    return {};
  }
}

export function readVerdict(key: string, file = verdictFile()): GpuVerdict | undefined {
  return readAll(file)[key];
}

/** Saved whole and renamed into place; a cache that cannot be written only means measuring again next time. */
export function saveVerdict(key: string, verdict: GpuVerdict, file = verdictFile()): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify({ ...readAll(file), [key]: verdict }, null, 2)}\n`);
    renameSync(temporary, file);
  } catch {}
}

/** "GPU 12 ms, CPU 40 ms a run, measured 2026-…" */
export function describeVerdict(verdict: GpuVerdict): string {
  return `GPU ${verdict.gpuMs} ms, CPU ${verdict.cpuMs} ms a run, measured ${verdict.at}`;
}
