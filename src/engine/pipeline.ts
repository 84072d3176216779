// The image pipeline for one image: probe → decode + orient (sharp) → model → mask → compose → encode.
// The model input and the output pixels are decoded by two sharp pipelines that run on libuv threads
// while the model runs, so decoding overlaps inference (bench/ measures the overlap).

import sharp, { type Region, type Sharp } from 'sharp';
import { RmbgError } from '../api/errors.js';
import { MIME_OF_FORMAT } from '../api/media-types.js';
import { LIMITS, type OutputFormat, type RemoveOptions } from '../api/options.js';
import { compose, maskBounds, type Bounds, type ComposeOutput } from './compose.js';
import { probeImage } from './image-probe.js';
import { pixelScale } from './model-contract.js';
import type { ModelSession } from './model-session.js';
import { isUpsizing, upsampleMask, type Size } from './mask-upsample.js';
import { fitWithin, maxResultPixels } from './output-size.js';
import { encodePng } from './png-encode.js';
import type { EngineResult, ForegroundBox } from './types.js';

interface Raw {
  data: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

/** A sharp pipeline on the input, EXIF-oriented, refusing truncated or corrupt data instead of returning grey pixels. */
function decoder(input: Buffer): Sharp {
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
      `the image could not be decoded (truncated or corrupt): ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/**
 * Planar CHW float tensor with the model's normalisation, from interleaved RGB bytes. One pass with a
 * 768-entry lookup table: the same float values as computing (v × scale - mean) / std per pixel, without the division.
 */
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

function maskToBytes(mask: Float32Array): Buffer {
  const bytes = Buffer.allocUnsafe(mask.length);
  for (let i = 0; i < mask.length; i++) {
    const v = mask[i] as number;
    bytes[i] = v <= 0 ? 0 : v >= 1 ? 255 : v * 255 + 0.5;
  }
  return bytes;
}

/**
 * sharp's linear resize of a one-byte-per-pixel mask, of a region of it when given: for shrinking, where the
 * kernel widens with the shrink. Its raw output stays one channel ('b-w': sharp would otherwise emit sRGB).
 */
function shrinkMask(mask: Buffer, from: Size, to: Size, region?: Region): Promise<Buffer> {
  const image = sharp(mask, { raw: { width: from.width, height: from.height, channels: 1 } });
  return (region ? image.extract(region) : image)
    .resize(to.width, to.height, { fit: 'fill', kernel: 'linear' })
    .toColourspace('b-w')
    .raw()
    .toBuffer();
}

/**
 * The mask at another size, one byte per pixel. Upsizing (a photo larger than the model's input, the costly
 * case) is mask-upsample.ts' bilinear pass; a mask shrunk on either axis goes to shrinkMask.
 */
async function resizeMask(mask: Buffer, plane: Size, to: Size): Promise<Buffer> {
  return isUpsizing(plane, to) ? upsampleMask(mask, plane, to) : shrinkMask(mask, plane, to);
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new RmbgError('interrupted', 'processing was cancelled');
}

export class Timer {
  readonly timings: Record<string, number> = {};
  private last = performance.now();
  lap(stage: string): void {
    const now = performance.now();
    this.timings[stage] = (this.timings[stage] ?? 0) + (now - this.last);
    this.last = now;
  }
}

/** What the pipeline needs of a model: a ModelSession, or the worker thread's (inference-worker.ts `WorkerSession`). */
export type ModelRunner = Pick<ModelSession, 'model' | 'inputSize' | 'run'>;

export async function runPipeline(
  session: ModelRunner,
  input: Buffer,
  options: RemoveOptions,
  signal?: AbortSignal,
): Promise<EngineResult> {
  const timer = new Timer();
  const probe = await probeImage(input);
  timer.lap('probe');
  const canvas = { width: probe.orientedWidth, height: probe.orientedHeight };
  const { width: modelW, height: modelH } = session.inputSize;
  const { contract } = session.model;
  const { mean, std } = contract.normalization;
  const channels: 3 | 4 = probe.hasAlpha ? 4 : 3;
  const maxPixels = maxResultPixels(options.size, options.format);

  // Without crop the output size is known now, so its decode overlaps inference.
  const outputSize = fitWithin(canvas.width, canvas.height, maxPixels);
  const outputPixels = options.crop
    ? undefined
    : toRaw(decoder(input).resize(outputSize.width, outputSize.height, { fit: 'fill' }), channels);
  outputPixels?.catch(() => undefined); // awaited below; avoid an unhandled rejection if inference fails first

  const modelInput = await toRaw(
    decoder(input).resize(modelW, modelH, { fit: 'fill' }).flatten({ background: '#ffffff' }),
    3,
  );
  timer.lap('decode');
  throwIfAborted(signal);
  const plane = await session.run(toTensor(modelInput.data, modelW * modelH, mean, std, pixelScale(contract)));
  timer.lap('inference');
  throwIfAborted(signal);
  const mask = maskToBytes(plane.data);

  let pixels: Raw;
  let resultMask: Buffer;
  let foreground: ForegroundBox;
  if (options.crop) {
    // Exact box on the canvas, then cut both the pixels and the mask to it. With no foreground at all,
    // nothing is trimmed (an empty image is not a valid result).
    const canvasMask = await resizeMask(mask, plane, canvas);
    const bounds = maskBounds(canvasMask, canvas.width, canvas.height);
    foreground = toBox(bounds);
    const region = bounds ? foreground : { left: 0, top: 0, width: canvas.width, height: canvas.height };
    const size = fitWithin(region.width, region.height, maxPixels);
    [pixels, resultMask] = await Promise.all([
      toRaw(decoder(input).extract(region).resize(size.width, size.height, { fit: 'fill' }), channels),
      shrinkMask(canvasMask, canvas, size, region), // the region is never smaller than `size` (fitWithin)
    ]);
  } else {
    [pixels, resultMask] = await Promise.all([outputPixels as Promise<Raw>, resizeMask(mask, plane, outputSize)]);
    foreground = scaleBox(maskBounds(resultMask, pixels.width, pixels.height), pixels, canvas);
  }
  timer.lap('mask');

  const background = options.bgColor;
  const format = chooseFormat(options, background, resultMask, pixels);
  // Compose is per pixel, so a band of rows composes on its own: the PNG encoder asks for bands and deflates
  // each on the thread pool while the next is composed (png-encode.ts). Other formats take the whole image.
  const { width, height } = pixels;
  const composeRows = (top: number, count: number): ComposeOutput => {
    throwIfAborted(signal); // a cancelled request stops between bands
    return compose({
      pixels: pixels.data.subarray(top * width * pixels.channels, (top + count) * width * pixels.channels),
      channels: pixels.channels,
      mask: resultMask.subarray(top * width, (top + count) * width),
      width,
      height: count,
      background,
      opaque: format === 'jpg',
    });
  };
  let data: Buffer;
  if (format === 'png') {
    data = await encodePng(width, height, composeRows);
  } else {
    const composed = composeRows(0, height);
    timer.lap('compose');
    throwIfAborted(signal);
    data = await encode(composed, width, height, format);
  }
  timer.lap('encode');
  return {
    data,
    format,
    mimeType: MIME_OF_FORMAT[format],
    width: pixels.width,
    height: pixels.height,
    foreground,
    timings: timer.timings,
  };
}

/** format=auto: PNG when the result has transparency, JPG when it is opaque (api-spec rule 4). */
function chooseFormat(
  options: RemoveOptions,
  background: RemoveOptions['bgColor'],
  mask: Buffer,
  pixels: Raw,
): OutputFormat {
  if (options.format !== 'auto') return options.format;
  if (background && background.alpha === 1) return 'jpg';
  if (background) return 'png';
  if (!mask.every((a) => a === 255)) return 'png';
  // The mask keeps everything: the result is opaque only if the input was (its own alpha is kept).
  if (pixels.channels === 4) {
    for (let i = 3; i < pixels.data.length; i += 4) if (pixels.data[i] !== 255) return 'png';
  }
  return 'jpg';
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
async function encode(
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
