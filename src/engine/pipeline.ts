// One image through the model; the result's pixels decode on libuv's threads while the model runs.

import sharp, { type Region, type Sharp } from 'sharp';
import { RmbgError } from '../api/errors.js';
import { AUTO_FORMAT, MIME_OF_FORMAT, OUTPUT_FORMATS } from '../api/media-types.js';
import { LIMITS } from '../api/limits.js';
import type { OutputFormat, RemoveOptions } from '../api/options.js';
import { maskBounds, type Bounds, type ComposeOutput } from './output/compose.js';
import { probeImage } from './image/image-probe.js';
import { decoderReason } from './image/input-errors.js';
import { pixelScale } from './model/model-contract.js';
import type { MaskPlane, ModelSession } from './model/model-session.js';
import { isUpsizing, upsampleMask, type Dimensions } from './output/mask-upsample.js';
import { fitWithin, maxResultPixels } from './output/output-size.js';
import { rowComposer } from './output/png-job.js';
import { encodePngOnWorker } from './output/png-workers.js';
import type { ForegroundBox } from '../api/wire-types.js';
import type { DecodedPhoto, EngineResult } from './types.js';

/** What the pipeline needs of a model: a ModelSession, or the worker thread's (inference-worker.ts `WorkerSession`). */
export type ModelRunner = Pick<ModelSession, 'model' | 'inputSize' | 'run'>;

/** Decoded pixels, 8 bits per channel, interleaved. */
interface Raw {
  data: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

/** An API image's bytes (probed here), or a photo decode-input.ts decoded and checked (oriented, sRGB). */
type PipelineInput = Buffer | DecodedPhoto;

/** The input and what its probe and the options fix about the result before the model runs. */
interface Source {
  input: PipelineInput;
  /** The image's size once EXIF-oriented. */
  canvas: Dimensions;
  channels: 3 | 4;
  /** The result's pixel ceiling (its size and format). */
  maxPixels: number;
}

/** The result's pixels and mask, at the result's size, and the foreground's box on the canvas. */
interface Cutout {
  pixels: Raw;
  mask: Buffer;
  foreground: ForegroundBox;
}

/** Without crop, the result's size is known before inference: its pixels, decoding meanwhile. */
interface EarlyDecode {
  size: Dimensions;
  pixels: Promise<Raw>;
}

/** Milliseconds per stage, for the result's `timings`. */
export class Timer {
  readonly timings: Record<string, number> = {};
  private last = performance.now();
  lap(stage: string): void {
    const now = performance.now();
    this.timings[stage] = (this.timings[stage] ?? 0) + (now - this.last);
    this.last = now;
  }
}

/** One image: probe → decode + orient → model → mask → compose → encode. */
export async function runPipeline(
  session: ModelRunner,
  input: PipelineInput,
  options: RemoveOptions,
  signal?: AbortSignal,
): Promise<EngineResult> {
  const timer = new Timer();
  const { canvas, hasAlpha } = await shapeOf(input);
  timer.lap('probe');
  const source: Source = {
    input,
    canvas,
    channels: hasAlpha ? 4 : 3,
    maxPixels: maxResultPixels(options.size, options.format),
  };
  const early = options.crop ? undefined : decodeResultEarly(source);
  const plane = await inferMask(session, input, timer, signal);
  const mask = maskToBytes(plane.data);
  const cutout = early
    ? await fitMaskToResult(early, mask, plane, source)
    : await cropToForeground(source, mask, plane);
  timer.lap('mask');
  const format = chooseFormat(options, cutout);
  const data = await composeAndEncode(cutout, options.bgColor, format, timer, signal);
  timer.lap('encode');
  const { width, height } = cutout.pixels;
  return {
    data,
    format,
    mimeType: MIME_OF_FORMAT[format],
    width,
    height,
    foreground: cutout.foreground,
    timings: timer.timings,
  };
}

/** The canvas (EXIF-oriented) and alpha: an API image's from its probed header, a decoded photo's as decoded. */
async function shapeOf(input: PipelineInput): Promise<{ canvas: Dimensions; hasAlpha: boolean }> {
  if (!Buffer.isBuffer(input))
    return { canvas: { width: input.width, height: input.height }, hasAlpha: input.channels === 4 };
  const probe = await probeImage(input);
  return { canvas: { width: probe.orientedWidth, height: probe.orientedHeight }, hasAlpha: probe.hasAlpha };
}

/** Starts decoding the result's pixels, so that the decode overlaps inference. */
function decodeResultEarly(source: Source): EarlyDecode {
  const size = fitWithin(source.canvas.width, source.canvas.height, source.maxPixels);
  const pixels = toRaw(decoder(source.input).resize(size.width, size.height, { fit: 'fill' }), source.channels);
  pixels.catch(() => undefined); // awaited later; no unhandled rejection if inference fails first
  return { size, pixels };
}

/** The model's mask plane for the input: decode at the model's size, normalise, run. */
async function inferMask(
  session: ModelRunner,
  input: PipelineInput,
  timer: Timer,
  signal: AbortSignal | undefined,
): Promise<MaskPlane> {
  const { width, height } = session.inputSize;
  const { contract } = session.model;
  const { mean, std } = contract.normalization;
  const modelInput = await toRaw(
    decoder(input).resize(width, height, { fit: 'fill' }).flatten({ background: '#ffffff' }),
    3,
  );
  timer.lap('decode');
  throwIfAborted(signal);
  const plane = await session.run(toTensor(modelInput.data, width * height, mean, std, pixelScale(contract)));
  timer.lap('inference');
  throwIfAborted(signal);
  return plane;
}

/** Without crop: the mask resized to the early-decoded pixels; the box found on them, mapped to the canvas. */
async function fitMaskToResult(early: EarlyDecode, mask: Buffer, plane: Dimensions, source: Source): Promise<Cutout> {
  const [pixels, resultMask] = await Promise.all([early.pixels, resizeMask(mask, plane, early.size)]);
  const foreground = scaleBox(maskBounds(resultMask, pixels.width, pixels.height), pixels, source.canvas);
  return { pixels, mask: resultMask, foreground };
}

/** With crop: the exact box on the canvas, then the pixels and the mask cut to it. */
async function cropToForeground(source: Source, mask: Buffer, plane: Dimensions): Promise<Cutout> {
  const { input, canvas, channels, maxPixels } = source;
  const canvasMask = await resizeMask(mask, plane, canvas);
  const bounds = maskBounds(canvasMask, canvas.width, canvas.height);
  const foreground = toBox(bounds);
  // No foreground at all: nothing is trimmed (an empty image is not a valid result).
  const region = bounds ? foreground : { left: 0, top: 0, width: canvas.width, height: canvas.height };
  const size = fitWithin(region.width, region.height, maxPixels);
  const [pixels, resultMask] = await Promise.all([
    toRaw(decoder(input).extract(region).resize(size.width, size.height, { fit: 'fill' }), channels),
    shrinkMask(canvasMask, canvas, size, region), // the region is never smaller than `size` (fitWithin)
  ]);
  return { pixels, mask: resultMask, foreground };
}

/** format=auto: the table's choice for a result with transparency or an opaque one (api-spec rule 4). */
function chooseFormat(options: RemoveOptions, { mask, pixels }: Cutout): OutputFormat {
  const background = options.bgColor;
  if (options.format !== 'auto') return options.format;
  if (background && background.alpha === 1) return AUTO_FORMAT.opaque;
  if (background) return AUTO_FORMAT.transparent;
  if (!mask.every((a) => a === 255)) return AUTO_FORMAT.transparent;
  // The mask keeps everything: the result is opaque only if the input was (its own alpha is kept).
  if (pixels.channels === 4) {
    for (let i = 3; i < pixels.data.length; i += 4) if (pixels.data[i] !== 255) return AUTO_FORMAT.transparent;
  }
  return AUTO_FORMAT.opaque;
}

/** PNG is composed band by band while earlier bands deflate, on a PNG worker (png-workers.ts); other formats take the
 * whole image. */
async function composeAndEncode(
  { pixels, mask }: Cutout,
  background: RemoveOptions['bgColor'],
  format: OutputFormat,
  timer: Timer,
  signal: AbortSignal | undefined,
): Promise<Buffer> {
  const { width, height, channels } = pixels;
  const job = { pixels: pixels.data, channels, mask, width, height, background };
  throwIfAborted(signal);
  if (format === 'png') {
    const png = await encodePngOnWorker(job);
    throwIfAborted(signal); // a request cancelled meanwhile gets no result
    return png;
  }
  const composed = rowComposer(job, !OUTPUT_FORMATS[format].keepsAlpha)(0, height);
  timer.lap('compose');
  throwIfAborted(signal);
  return encodeWithSharp(composed, width, height, format);
}

/** A sharp pipeline on the input, EXIF-oriented, refusing truncated or corrupt data rather than decode it grey. */
function decoder(input: PipelineInput): Sharp {
  if (!Buffer.isBuffer(input)) {
    const { pixels, width, height, channels } = input;
    return sharp(pixels, { raw: { width, height, channels } });
  }
  return sharp(input, { failOn: 'error', limitInputPixels: LIMITS.maxPixels, sequentialRead: true }).rotate();
}

async function toRaw(pipeline: Sharp, channels: 3 | 4): Promise<Raw> {
  const oriented = pipeline.toColourspace('srgb');
  const shaped = channels === 4 ? oriented.ensureAlpha() : oriented.removeAlpha();
  try {
    const { data, info } = await shaped.raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, channels };
  } catch (error) {
    throw new RmbgError(
      'corrupt_image',
      `the image could not be decoded (truncated or corrupt): ${decoderReason(error)}`,
      { cause: error },
    );
  }
}

/** The model's normalised CHW tensor from RGB bytes, through a lookup table: the same values, without a division per
 * pixel (bench/RESULTS.md, "What changed in the engine, and why"). */
function toTensor(rgb: Buffer, pixelCount: number, mean: number[], std: number[], scale: number): Float32Array {
  const lut = new Float32Array(768);
  for (let c = 0; c < 3; c++)
    for (let v = 0; v < 256; v++) lut[c * 256 + v] = (v * scale - (mean[c] as number)) / (std[c] as number);
  const tensor = new Float32Array(pixelCount * 3);
  const green = pixelCount;
  const blue = pixelCount * 2;
  for (let i = 0, j = 0; i < pixelCount; i++, j += 3) {
    tensor[i] = lut[rgb[j] as number] as number;
    tensor[green + i] = lut[256 + (rgb[j + 1] as number)] as number;
    tensor[blue + i] = lut[512 + (rgb[j + 2] as number)] as number;
  }
  return tensor;
}

/** The mask plane's 0..1 floats as bytes, rounded. */
function maskToBytes(mask: Float32Array): Buffer {
  const bytes = Buffer.allocUnsafe(mask.length);
  for (let i = 0; i < mask.length; i++) {
    const v = mask[i] as number;
    bytes[i] = v <= 0 ? 0 : v >= 1 ? 255 : v * 255 + 0.5;
  }
  return bytes;
}

/** The mask at another size: upsizing (the costly case) by mask-upsample.ts, shrinking on either axis by sharp. */
async function resizeMask(mask: Buffer, plane: Dimensions, to: Dimensions): Promise<Buffer> {
  return isUpsizing(plane, to) ? upsampleMask(mask, plane, to) : shrinkMask(mask, plane, to);
}

/** A mask (or a region of it) shrunk by sharp, whose kernel widens with the shrink; 'b-w' keeps one channel. */
function shrinkMask(mask: Buffer, from: Dimensions, to: Dimensions, region?: Region): Promise<Buffer> {
  const image = sharp(mask, { raw: { width: from.width, height: from.height, channels: 1 } });
  return (region ? image.extract(region) : image)
    .resize(to.width, to.height, { fit: 'fill', kernel: 'linear' })
    .toColourspace('b-w')
    .raw()
    .toBuffer();
}

function toBox(bounds: Bounds | null): ForegroundBox {
  if (!bounds) return { top: 0, left: 0, width: 0, height: 0 };
  return {
    top: bounds.top,
    left: bounds.left,
    width: bounds.right - bounds.left + 1,
    height: bounds.bottom - bounds.top + 1,
  };
}

/** Bounds found on the (scaled) result mapped back to canvas pixels, rounded outwards. */
function scaleBox(
  bounds: Bounds | null,
  result: { width: number; height: number },
  canvas: { width: number; height: number },
): ForegroundBox {
  if (!bounds) return toBox(null);
  const sx = canvas.width / result.width;
  const sy = canvas.height / result.height;
  const left = Math.floor(bounds.left * sx);
  const top = Math.floor(bounds.top * sy);
  const right = Math.min(canvas.width, Math.ceil((bounds.right + 1) * sx));
  const bottom = Math.min(canvas.height, Math.ceil((bounds.bottom + 1) * sy));
  return { top, left, width: right - left, height: bottom - top };
}

/** JPG and WebP through sharp; PNG has its own banded encoder (png-encode.ts). */
async function encodeWithSharp(
  composed: ComposeOutput,
  width: number,
  height: number,
  format: Exclude<OutputFormat, 'png'>,
): Promise<Buffer> {
  const image = sharp(composed.pixels, { raw: { width, height, channels: composed.channels } });
  switch (format) {
    case 'jpg':
      return image.jpeg({ quality: 90, chromaSubsampling: '4:4:4' }).toBuffer();
    case 'webp':
      return image.webp({ quality: 90, alphaQuality: 100, effort: 2 }).toBuffer();
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new RmbgError('interrupted', 'processing was cancelled');
}
