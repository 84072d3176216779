// What the engine reports of where its model runs, and how many images in flight keep that device busy.

import { availableParallelism } from 'node:os';
import type { Device } from '../api/device.js';

/** Where a model runs and why: said once on stderr, and carried by --json, /readyz and /metrics. */
export interface DeviceReport {
  /** What was asked for. */
  requested: Device;
  /** What runs: 'gpu' is onnxruntime's WebGPU provider, 'cpu' its CPU provider. */
  device: 'gpu' | 'cpu';
  /** Why, in one sentence. */
  reason: string;
  /** Images in flight that keep this device busy (the batch's default concurrency; a GPU server's slots). */
  concurrency: number;
}

/** The line a person reads: "running on the GPU (WebGPU): a hardware adapter works". */
export function describeDevice(report: DeviceReport): string {
  return `running on the ${report.device === 'gpu' ? 'GPU (WebGPU)' : 'CPU'}: ${report.reason}`;
}

/**
 * The CPU: 2 (one image decodes or encodes while the other is in the model). The GPU infers in ~45 ms, so
 * decoding and encoding on the CPU cores are the limit: half the cores, 2 to 8 (bench/RESULTS.md, "Issue #19").
 */
export function concurrencyFor(device: DeviceReport['device'], cores = availableParallelism()): number {
  return device === 'gpu' ? Math.min(8, Math.max(2, Math.floor(cores / 2))) : 2;
}
