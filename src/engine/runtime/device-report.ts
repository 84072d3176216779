// How the engine describes where its model runs, and how many images in flight keep that device busy.

import { availableParallelism } from 'node:os';
import type { DeviceReport } from '../../api/device.js';
import { availableMemory, imagesWithinMemory } from './memory-budget.js';

/** The line a person reads: "running on the GPU (WebGPU): a hardware adapter works". */
export function describeDevice(report: DeviceReport): string {
  return `running on the ${report.device === 'gpu' ? 'GPU (WebGPU)' : 'CPU'}: ${report.reason}`;
}

/** CPU: 2, one image in the model while the other decodes or encodes; GPU: the CPU's work is the limit, so half
 * the cores, 2 to 8 (bench/RESULTS.md, "Issue #19: the GPU"). Either way no more than the images of the largest
 * size allowed that fit in the memory the process may still take (memory-budget.ts), and at least one. */
export function concurrencyFor(
  device: DeviceReport['device'],
  cores = availableParallelism(),
  memoryBytes = availableMemory(),
): number {
  const busy = device === 'gpu' ? Math.min(8, Math.max(2, Math.floor(cores / 2))) : 2;
  return Math.min(busy, imagesWithinMemory(memoryBytes));
}
