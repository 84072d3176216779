// Whether the GPU beats the CPU provider for a model on this machine, measured once by `auto` and remembered in
// the user's cache, so later starts pay neither the probe nor the measurement. A weak integrated GPU can be slower
// than the CPU provider; a verdict holds for one adapter, driver, onnxruntime and model, and a change of any of
// them measures again. Each device's start is measured too: a GPU starts slower, so a small job may end sooner
// on the CPU (estimateJob).

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
  /** A start on each device up to its first run's answer: the worker, the session, the first run (shaders on the
   * GPU). A verdict saved before they were measured is measured again (readVerdict). */
  gpuStartMs: number;
  cpuStartMs: number;
  /** When it was measured (ISO 8601). */
  at: string;
}

/** Each device's start and runs for a job of `photos`, estimated from a verdict that has the start times. */
export interface JobEstimate {
  photos: number;
  gpuMs: number;
  cpuMs: number;
}

/** How long a job of `photos` takes on each device, its start included. */
export function estimateJob(verdict: GpuVerdict, photos: number): JobEstimate {
  const { gpuStartMs, cpuStartMs } = verdict;
  return { photos, gpuMs: gpuStartMs + photos * verdict.gpuMs, cpuMs: cpuStartMs + photos * verdict.cpuMs };
}

/** The fewest photos a job must hold for auto to take the GPU, whose start is slower: where its start and runs end
 * no later than the CPU's. Infinity where the CPU runs faster. */
export function fewestPhotosForGpu(verdict: GpuVerdict): number {
  if (verdict.device === 'cpu') return Number.POSITIVE_INFINITY;
  const slowerStart = verdict.gpuStartMs - verdict.cpuStartMs;
  const savedPerPhoto = verdict.cpuMs - verdict.gpuMs;
  if (slowerStart <= 0) return 1;
  return savedPerPhoto > 0 ? Math.ceil(slowerStart / savedPerPhoto) : Number.POSITIVE_INFINITY;
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

/** The verdict for `key`; none for one saved before the start times were measured, so that it is measured again. */
export function readVerdict(key: string, file = verdictFile()): GpuVerdict | undefined {
  const verdict = readAll(file)[key];
  return verdict && Number.isFinite(verdict.gpuStartMs) && Number.isFinite(verdict.cpuStartMs) ? verdict : undefined;
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

/** "GPU 12 ms a run after a 1900 ms start, CPU 40 ms a run after a 800 ms start, measured 2026-…" */
export function describeVerdict(verdict: GpuVerdict): string {
  const device = (name: string, runMs: number, startMs: number) =>
    `${name} ${runMs} ms a run after a ${startMs} ms start`;
  const gpu = device('GPU', verdict.gpuMs, verdict.gpuStartMs);
  return `${gpu}, ${device('CPU', verdict.cpuMs, verdict.cpuStartMs)}, measured ${verdict.at}`;
}

/** "3 photos: about 2.1 s on the GPU, 2.0 s on the CPU, starts included" */
export function describeEstimate(estimate: JobEstimate): string {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const photos = `${estimate.photos} photo${estimate.photos === 1 ? '' : 's'}`;
  return `${photos}: about ${seconds(estimate.gpuMs)} on the GPU, ${seconds(estimate.cpuMs)} on the CPU, starts included`;
}
