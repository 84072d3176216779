// The per-pixel JavaScript of one image, as plain functions of typed arrays and numbers: the model's input tensor,
// the mask as bytes fitted to the result with its foreground box, the auto format's choice, compose (compose.ts)
// and the PNG (png-encode.ts). They run as jobs on pixel workers (runtime/pixel-jobs.ts, runtime/pixel-workers.ts)
// so the main thread only orchestrates; the same code in process gives the same bytes
// (test/integration/engine/runtime/pixel-workers.test.ts).

import type { Rgba } from '../../api/color.js';
import { AUTO_FORMAT, OUTPUT_FORMATS } from '../../api/media-types.js';
import type { Format, OutputFormat } from '../../api/options.js';
import { compose, maskBounds, type Bounds, type ComposeOutput } from './compose.js';
import { upsampleMask, type Dimensions } from './mask-upsample.js';
import { estimateForeground } from './foreground-colour.js';
import { encodePng, pngBandRows } from './png-encode.js';
import { SCRATCH } from './scratch-buffers.js';
import { bufferOf } from '../../platform/thread-transfer.js';

/** RGB bytes at the model's size and the model's normalisation (model-contract.ts). */
export interface TensorJob {
  rgb: Uint8Array;
  pixelCount: number;
  mean: number[];
  std: number[];
  scale: number;
  /** Where the tensor goes (a lent buffer of pixelCount×3 floats: runtime/lent-buffers.ts); a new one if absent. */
  into?: Float32Array | undefined;
}

/** A mask as a job gets it: the model's plane (0..1 floats, model-session.ts' MaskPlane) or bytes, `width`×`height`. */
export interface MaskInput extends Dimensions {
  data: Float32Array | Uint8Array;
}

export interface MaskJob extends MaskInput {
  /** Upsized to this (both sides at least the mask's: mask-upsample.ts); shrinking is sharp's, in pipeline.ts. */
  to?: Dimensions;
  findBounds: boolean;
}

export interface FittedMask {
  /** One byte per pixel, at `to` (or the input's size). */
  mask: Uint8Array;
  /** The foreground's box when asked: null when there is none. */
  bounds?: Bounds | null;
}

/** A result's pixels and its mask (at the pixels' size, or the model's plane upsized to it here). */
export interface FinishJob {
  /** Raw interleaved pixels, `channels` per pixel, width×height. */
  pixels: Uint8Array;
  channels: 3 | 4;
  width: number;
  height: number;
  mask: MaskInput;
  /** Find the foreground's box on the result's mask (no crop: the box is not known yet). */
  findBounds: boolean;
  /** The format asked for; `auto` is chosen here (api-spec rule 4). */
  format: Format;
  background: Rgba | undefined;
  /** The soft edges' colours replaced by the foreground's estimated own (foreground-colour.ts), in `pixels` itself;
   * absent or false: the photo's pixels as they are. */
  cleanEdges?: boolean | undefined;
}

/** The result's format and box, and a PNG's file or JPG/WebP's composed pixels, which sharp encodes. */
export type Finished = { format: OutputFormat; bounds?: Bounds | null } & (
  | { png: Uint8Array }
  | { composed: Uint8Array; channels: 3 | 4 }
);

/** What compose needs of a result. */
export interface ComposeJob {
  pixels: Uint8Array;
  channels: 3 | 4;
  mask: Uint8Array;
  width: number;
  height: number;
  background: Rgba | undefined;
}

/** The model's normalised CHW tensor from RGB bytes, through a lookup table: the same values, without a division per
 * pixel (bench/RESULTS.md, "What changed in the engine, and why"). */
export function modelTensor({ rgb, pixelCount, mean, std, scale, into }: TensorJob): Float32Array {
  const lut = new Float32Array(768);
  for (let c = 0; c < 3; c++)
    for (let v = 0; v < 256; v++) lut[c * 256 + v] = (v * scale - (mean[c] as number)) / (std[c] as number);
  const tensor = into ?? new Float32Array(pixelCount * 3);
  const green = pixelCount;
  const blue = pixelCount * 2;
  for (let i = 0, j = 0; i < pixelCount; i++, j += 3) {
    tensor[i] = lut[rgb[j] as number] as number;
    tensor[green + i] = lut[256 + (rgb[j + 1] as number)] as number;
    tensor[blue + i] = lut[512 + (rgb[j + 2] as number)] as number;
  }
  return tensor;
}

/** The mask plane's 0..1 floats as bytes, rounded, into `bytes`. */
function maskToBytes(mask: Float32Array, bytes: Uint8Array): Uint8Array {
  for (let i = 0; i < mask.length; i++) {
    const v = mask[i] as number;
    bytes[i] = v <= 0 ? 0 : v >= 1 ? 255 : v * 255 + 0.5;
  }
  return bytes;
}

/** Where a job's buffers come from: new ones (a result that leaves the thread), or the thread's scratch, each one
 * recorded in `taken` to be given back. */
type Allocate = (length: number) => Uint8Array;
const fresh: Allocate = (length) => Buffer.allocUnsafe(length);
function fromScratch(taken: Uint8Array[]): Allocate {
  return (length) => {
    const bytes = SCRATCH.bytes(length);
    taken.push(bytes);
    return bytes;
  };
}

/** The mask as bytes, upsized to `to` when given, and its foreground's box when asked. */
export function fitMask(job: MaskJob): FittedMask {
  return fittedMask(job, fresh);
}

function fittedMask({ data, width, height, to, findBounds }: MaskJob, allocate: Allocate): FittedMask {
  const size = to ?? { width, height };
  const same = size.width === width && size.height === height;
  // Only the last step's buffer is the result's: the bytes before an upsizing are scratch either way.
  const bytes = data instanceof Float32Array ? maskToBytes(data, same ? allocate(data.length) : scratchOf(data)) : data;
  const fitted = same
    ? bufferOf(bytes)
    : upsampleMask(bytes, { width, height }, size, allocate(size.width * size.height));
  if (data instanceof Float32Array && !same) SCRATCH.give(bytes);
  return { mask: fitted, bounds: findBounds ? maskBounds(fitted, size.width, size.height) : undefined };
}

/** A plane's worth of scratch bytes. */
const scratchOf = (plane: Float32Array): Uint8Array => SCRATCH.bytes(plane.length);

/** format=auto: the table's choice for a result with transparency or an opaque one (api-spec rule 4). */
function chooseFormat(format: Format, background: Rgba | undefined, mask: Uint8Array, job: ComposeJob): OutputFormat {
  if (format !== 'auto') return format;
  if (background && background.alpha === 1) return AUTO_FORMAT.opaque;
  if (background) return AUTO_FORMAT.transparent;
  if (!mask.every((a) => a === 255)) return AUTO_FORMAT.transparent;
  // The mask keeps everything: the result is opaque only if the input was (its own alpha is kept).
  if (job.channels === 4) {
    for (let i = 3; i < job.pixels.length; i += 4) if (job.pixels[i] !== 255) return AUTO_FORMAT.transparent;
  }
  return AUTO_FORMAT.opaque;
}

/** The composed rows `top` to `top + count` of the result; `opaque` flattens onto white (JPG). With `into`, each
 * call's rows go there (valid until the next call: the PNG encoder's bands). */
export function rowComposer(
  job: ComposeJob,
  opaque: boolean,
  into?: Uint8Array,
): (top: number, count: number) => ComposeOutput {
  const { width, channels, background } = job;
  const pixels = bufferOf(job.pixels);
  const mask = bufferOf(job.mask);
  return (top, count) =>
    compose({
      pixels: pixels.subarray(top * width * channels, (top + count) * width * channels),
      channels,
      mask: mask.subarray(top * width, (top + count) * width),
      width,
      height: count,
      background,
      opaque,
      out: into,
    });
}

/** The result from its pixels and mask: the mask fitted, the box, the format; a PNG composed band by band while
 * earlier bands deflate, or the whole image composed for sharp. The mask and the bands are the thread's scratch,
 * given back at the end; only the result is new. */
export async function finishCutout(job: FinishJob): Promise<Finished> {
  const { pixels, channels, width, height, background } = job;
  const taken: Uint8Array[] = [];
  try {
    const fitting = { ...job.mask, to: { width, height }, findBounds: job.findBounds };
    const { mask, bounds } = fittedMask(fitting, fromScratch(taken));
    if (job.cleanEdges) estimateForeground({ pixels, channels, mask, width, height });
    const composeJob = { pixels, channels, mask, width, height, background };
    const format = chooseFormat(job.format, background, mask, composeJob);
    if (OUTPUT_FORMATS[format].encoder.by === 'png-bands') {
      const band = fromScratch(taken)(Math.min(height, pngBandRows(width)) * width * 4);
      return { format, bounds, png: await encodePng(width, height, rowComposer(composeJob, false, band)) };
    }
    const composed = rowComposer(composeJob, !OUTPUT_FORMATS[format].keepsAlpha)(0, height);
    return { format, bounds, composed: composed.pixels, channels: composed.channels };
  } finally {
    for (const bytes of taken) SCRATCH.give(bytes);
  }
}
