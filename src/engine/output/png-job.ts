// A result's pixels and mask composed into rows (compose.ts), and its PNG from them: the bands composed one by one
// while earlier bands deflate (png-encode.ts). The PNG is made on a PNG worker (png-workers.ts) with this same code,
// so the bytes are the main thread's.

import type { Rgba } from '../../api/color.js';
import { compose, type ComposeOutput } from './compose.js';
import { encodePng } from './png-encode.js';

/** What the worker is sent: plain typed arrays and numbers, which a message copies. */
export interface PngJob {
  /** Raw interleaved pixels, `channels` per pixel, width×height. */
  pixels: Uint8Array;
  channels: 3 | 4;
  /** One byte per pixel. */
  mask: Uint8Array;
  width: number;
  height: number;
  background: Rgba | undefined;
}

/** The composed rows `top` to `top + count` of the result; `opaque` flattens onto white (JPG). */
export function rowComposer(job: PngJob, opaque: boolean): (top: number, count: number) => ComposeOutput {
  const { width, channels, background } = job;
  const pixels = Buffer.from(job.pixels.buffer, job.pixels.byteOffset, job.pixels.byteLength);
  const mask = Buffer.from(job.mask.buffer, job.mask.byteOffset, job.mask.byteLength);
  return (top, count) =>
    compose({
      pixels: pixels.subarray(top * width * channels, (top + count) * width * channels),
      channels,
      mask: mask.subarray(top * width, (top + count) * width),
      width,
      height: count,
      background,
      opaque,
    });
}

export function composeAndEncodePng(job: PngJob): Promise<Buffer> {
  return encodePng(job.width, job.height, rowComposer(job, false));
}
