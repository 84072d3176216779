// The device setting, declared once: its values, its default, its parsing, and what the engine reports of
// where a model runs. Nothing heavy is imported here (the CLI's --help and `rmbg config` read it).

import { availableParallelism } from 'node:os';
import { RmbgError } from '../api/errors.js';

/** auto: the GPU when a hardware adapter works, else the CPU; gpu: the GPU or an error; cpu: the CPU only. */
export const DEVICES = ['auto', 'gpu', 'cpu'] as const;
export type Device = (typeof DEVICES)[number];
export const DEFAULT_DEVICE: Device = 'auto';
export const DEVICE_DESCRIPTION = 'where the model runs: auto (the GPU when a hardware one works, else the CPU), gpu (WebGPU, or an error), cpu';

export function parseDevice(value: unknown, name = 'device'): Device {
  if (typeof value === 'string' && (DEVICES as readonly string[]).includes(value)) return value as Device;
  throw new RmbgError('usage_error', `${name} must be one of ${DEVICES.join(', ')}; got ${JSON.stringify(value)}`);
}

/** Where a model runs and why: said once on stderr, and carried by --json, /readyz and /metrics. */
export interface DeviceReport {
  /** What was asked for. */
  requested: Device;
  /** What runs: 'gpu' is onnxruntime's WebGPU provider, 'cpu' its CPU provider. */
  device: 'gpu' | 'cpu';
  /** Why, in one sentence. */
  reason: string;
}

/** The line a person reads: "running on the GPU (WebGPU): a hardware adapter works". */
export function describeDevice(report: DeviceReport): string {
  return `running on the ${report.device === 'gpu' ? 'GPU (WebGPU)' : 'CPU'}: ${report.reason}`;
}

/**
 * Images in flight that keep the device busy. The CPU: 2 (one decodes or encodes while the other is in the
 * model). The GPU infers in ~45 ms, so decoding and encoding on the CPU cores are the limit: half the cores,
 * 2 to 8 (bench/RESULTS.md, "Issue #19").
 */
export function concurrencyFor(device: DeviceReport['device'], cores = availableParallelism()): number {
  return device === 'gpu' ? Math.min(8, Math.max(2, Math.floor(cores / 2))) : 2;
}

/**
 * Images `rmbg serve` processes at once: one on the CPU (the model already takes every core, and a request
 * waits least behind one other), on the GPU as many as keep it busy. Without a report: the CPU.
 */
export function serverSlotsFor(report: DeviceReport | undefined): number {
  return report?.device === 'gpu' ? concurrencyFor('gpu') : 1;
}
