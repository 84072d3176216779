// One image through the model; the result's pixels decode on libuv's threads while the model runs, the per-pixel
// JavaScript runs on pixel workers (runtime/pixel-workers.ts): this thread orchestrates.

import sharp, { type Region, type Sharp } from 'sharp';
import { RmbgError } from '../api/errors.js';
import { MIME_OF_FORMAT, OUTPUT_FORMATS, type LocalFormat } from '../api/media-types.js';
import { LIMITS } from '../api/limits.js';
import type { OutputFormat, RemoveOptions } from '../api/options.js';
import { maskBounds, type Bounds, type ComposeOutput } from './output/compose.js';
import { probeImage } from './image/image-probe.js';
import { decoderReason } from './image/input-errors.js';
import { pixelScale } from './model/model-contract.js';
import type { MaskPlane, ModelSession } from './model/model-session.js';
import { maskConfidence } from './output/mask-confidence.js';
import { isUpsizing, type Dimensions } from './output/mask-upsample.js';
import { fitWithin, maxResultPixels } from './output/output-size.js';
import type { Finished, MaskInput } from './output/pixel-operations.js';
import type { PixelWork } from './runtime/pixel-jobs.js';
import { onPixelWorker } from './runtime/pixel-workers.js';
import { bufferOf, movableBuffers } from '../platform/thread-transfer.js';
import type { ForegroundBox } from '../api/wire-types.js';
import { encodeLayered, encodeMaskFile, layeredFormatOf, photoSourceOf, type PhotoSource } from './layered-output.js';
import type { DecodedPhoto, EngineResult, LocalOutputs } from './types.js';

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

/** The result's pixels and its mask as the finishing job takes it; with crop, the box already found. */
interface Cutout {
  pixels: Raw;
  mask: MaskInput;
  /** Buffers of the mask that the finishing job may take (sharp's buffers are copied: see movableBuffers). */
  transfer: ArrayBuffer[];
  foreground?: ForegroundBox;
  /** With crop, the region of the canvas the result shows. */
  region?: Region;
}

/** Without crop, the result's size is known before inference: its pixels, decoding meanwhile. */
interface EarlyDecode {
  size: Dimensions;
  pixels: Promise<Raw>;
}

/** The engine's own settings that change a result's pixels (settings/engine.ts), beside the caller's options. */
export interface PipelineSettings {
  cleanEdges: boolean;
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

/** One image: probe → decode + orient → model → mask → compose → encode. The per-pixel steps run through
 * `pixelWork`: on pixel workers (pixel-workers.ts), so this thread only orchestrates; in process for a test.
 * `local`: the mask file and the layered formats' source, for rmbg's own callers (layered-output.ts). */
export async function runPipeline(
  session: ModelRunner,
  input: PipelineInput,
  options: RemoveOptions,
  signal?: AbortSignal,
  pixelWork: PixelWork = onPixelWorker,
  local: LocalOutputs = {},
  settings: PipelineSettings = { cleanEdges: true },
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
  const early = options.crop || local.mask === 'only' ? undefined : decodeResultEarly(source);
  const plane = await inferMask(session, input, timer, signal, pixelWork);
  // On the model's plane, before it is resized or moved to a pixel worker: one pass, the same cost for any photo.
  const { confidence } = maskConfidence(plane.data);
  timer.lap('confidence');
  // Asked before the plane moves to the finishing job: this job gets a copy.
  const canvasMask = local.mask ? maskAt(plane, canvas, pixelWork, []) : undefined;
  canvasMask?.catch(() => undefined); // awaited below
  const layered = layeredFormatOf(options.format);
  const photo = layered || local.mask ? photoSourceOf(input, local.original) : undefined;
  photo?.catch(() => undefined); // awaited below
  if (canvasMask && photo && local.mask === 'only')
    return maskOnlyResult(await canvasMask, await photo, canvas, confidence, timer);
  const cutout = early
    ? await fitMaskToResult(early, plane, pixelWork)
    : await cropToForeground(source, plane, pixelWork);
  timer.lap('mask');
  throwIfAborted(signal);
  const { pixels } = cutout;
  const finished = layered
    ? await finishLayered(layered, cutout, (await photo) as PhotoSource, options, pixelWork)
    : await pixelWork(
        'finish',
        {
          pixels: pixels.data,
          channels: pixels.channels,
          width: pixels.width,
          height: pixels.height,
          mask: cutout.mask,
          findBounds: !cutout.foreground,
          format: options.format,
          background: options.bgColor,
          cleanEdges: settings.cleanEdges,
        },
        cutout.transfer,
      );
  throwIfAborted(signal); // a request cancelled meanwhile gets no result
  const data = 'layered' in finished ? finished.layered : await encoded(finished, pixels, timer);
  const mask = canvasMask && (await encodeMaskFile((await photo) as PhotoSource, await canvasMask, canvas));
  timer.lap('encode');
  return {
    data,
    format: finished.format,
    mimeType: MIME_OF_FORMAT[finished.format],
    width: pixels.width,
    height: pixels.height,
    // Without crop the box was found on the result's mask: mapped back to the canvas.
    foreground: cutout.foreground ?? scaleBox(finished.bounds ?? null, pixels, canvas),
    confidence,
    timings: timer.timings,
    ...(mask && { mask }),
  };
}

/** --mask-only: the mask file is the result (its data and its mask); nothing is composed or encoded besides it. */
async function maskOnlyResult(
  mask: Buffer,
  photo: PhotoSource,
  canvas: Dimensions,
  confidence: number,
  timer: Timer,
): Promise<EngineResult> {
  const data = await encodeMaskFile(photo, mask, canvas);
  timer.lap('encode');
  const foreground = toBox(maskBounds(mask, canvas.width, canvas.height));
  return {
    data,
    format: 'png',
    mimeType: MIME_OF_FORMAT.png,
    ...canvas,
    foreground,
    confidence,
    timings: timer.timings,
    mask: data,
  };
}

/** A layered format's file (layered-output.ts) from the result's mask, fitted here with the foreground's box. */
async function finishLayered(
  format: LocalFormat,
  cutout: Cutout,
  photo: PhotoSource,
  options: RemoveOptions,
  pixelWork: PixelWork,
): Promise<{ format: LocalFormat; bounds?: Bounds | null; layered: Buffer }> {
  const size = { width: cutout.pixels.width, height: cutout.pixels.height };
  const fitted = await pixelWork('mask', { ...cutout.mask, to: size, findBounds: !cutout.foreground }, cutout.transfer);
  const geometry = { size, region: cutout.region };
  const layered = await encodeLayered(format, photo, geometry, bufferOf(fitted.mask), options.bgColor);
  return { format, bounds: fitted.bounds, layered };
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

/** The model's mask plane for the input: decode at the model's size, normalise (a pixel worker's job), run. */
async function inferMask(
  session: ModelRunner,
  input: PipelineInput,
  timer: Timer,
  signal: AbortSignal | undefined,
  pixelWork: PixelWork,
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
  // sharp's bytes are copied into the message; the tensor comes back moved, and moves on to the model's worker.
  const rgb = modelInput.data;
  const tensor = await pixelWork('tensor', { rgb, pixelCount: width * height, mean, std, scale: pixelScale(contract) });
  throwIfAborted(signal);
  const plane = await session.run(tensor);
  timer.lap('inference');
  throwIfAborted(signal);
  return plane;
}

/** Without crop: the mask fitted to the early-decoded pixels. Upsizing is the finishing job's (it takes the plane);
 * shrinking is sharp's, here, on the plane's bytes. */
async function fitMaskToResult(early: EarlyDecode, plane: MaskPlane, pixelWork: PixelWork): Promise<Cutout> {
  if (isUpsizing(plane, early.size))
    return { pixels: await early.pixels, mask: plane, transfer: movableBuffers(plane.data) };
  const [pixels, mask] = await Promise.all([early.pixels, shrunkPlane(plane, early.size, pixelWork)]);
  return { pixels, mask: { data: mask, ...early.size }, transfer: [] };
}

/** With crop: the exact box on the canvas (the mask fitted to it), then the pixels and the mask cut to the box. */
async function cropToForeground(source: Source, plane: MaskPlane, pixelWork: PixelWork): Promise<Cutout> {
  const { input, canvas, channels, maxPixels } = source;
  const onCanvas = isUpsizing(plane, canvas)
    ? await pixelWork('mask', { ...plane, to: canvas, findBounds: true }, movableBuffers(plane.data))
    : await pixelWork('mask', { data: await shrunkPlane(plane, canvas, pixelWork), ...canvas, findBounds: true });
  const bounds = onCanvas.bounds ?? null;
  const foreground = toBox(bounds);
  // No foreground at all: nothing is trimmed (an empty image is not a valid result).
  const region = bounds ? foreground : { left: 0, top: 0, width: canvas.width, height: canvas.height };
  const size = fitWithin(region.width, region.height, maxPixels);
  const [pixels, mask] = await Promise.all([
    toRaw(decoder(input).extract(region).resize(size.width, size.height, { fit: 'fill' }), channels),
    // the region is never smaller than `size` (fitWithin)
    shrinkMask(bufferOf(onCanvas.mask), canvas, size, region),
  ]);
  return { pixels, mask: { data: mask, ...size }, transfer: [], foreground, region };
}

/** The model's plane as bytes (a pixel worker's job), shrunk by sharp to `to`; `transfer` [] keeps the plane here. */
async function shrunkPlane(
  plane: MaskPlane,
  to: Dimensions,
  pixelWork: PixelWork,
  transfer = movableBuffers(plane.data),
): Promise<Buffer> {
  const { mask } = await pixelWork('mask', { ...plane, findBounds: false }, transfer);
  return shrinkMask(bufferOf(mask), plane, to);
}

/** The model's plane fitted to `to` as bytes, upsized by a pixel worker or shrunk by sharp. */
async function maskAt(
  plane: MaskPlane,
  to: Dimensions,
  pixelWork: PixelWork,
  transfer: ArrayBuffer[],
): Promise<Buffer> {
  if (!isUpsizing(plane, to)) return shrunkPlane(plane, to, pixelWork, transfer);
  return bufferOf((await pixelWork('mask', { ...plane, to, findBounds: false }, transfer)).mask);
}

/** The result's file: the PNG the pixel worker made, or JPG/WebP by sharp from its composed pixels. */
async function encoded(finished: Finished, { width, height }: Raw, timer: Timer): Promise<Buffer> {
  if ('png' in finished) return bufferOf(finished.png);
  timer.lap('compose');
  const composed = { pixels: bufferOf(finished.composed), channels: finished.channels };
  return encodeWithSharp(composed, width, height, finished.format);
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

/** A format sharp encodes, with the options of its row (api/media-types.ts); PNG has its own banded encoder
 * (png-encode.ts, on a pixel worker). */
async function encodeWithSharp(
  composed: ComposeOutput,
  width: number,
  height: number,
  format: OutputFormat,
): Promise<Buffer> {
  const { encoder } = OUTPUT_FORMATS[format];
  if (encoder.by !== 'sharp') throw new Error(`${format} is not encoded by sharp`);
  const image = sharp(composed.pixels, { raw: { width, height, channels: composed.channels } });
  return image[encoder.method](encoder.options).toBuffer();
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new RmbgError('interrupted', 'processing was cancelled');
}
