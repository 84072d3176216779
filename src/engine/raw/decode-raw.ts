// A camera RAW made into the photo the engine cuts out (or the image uploaded to a server): the camera's own
// full-size JPEG preview when it stored one (`--raw preview`, the default: no demosaic, the camera's rendering), else
// a development by LibRaw on a pixel worker (`--raw develop`, or a RAW whose preview is smaller than its sensor). The
// photo keeps the RAW's size and is turned upright by its Orientation tag.

import sharp from 'sharp';
import { RmbgError } from '../../api/errors.js';
import { LIMIT_TEXT, LIMITS } from '../../api/limits.js';
import { RAW_FORMATS, type RawFormat } from '../../api/media-types.js';
import { bufferOf } from '../../platform/thread-transfer.js';
import { checkDimensions } from '../image/image-probe.js';
import { decoderReason } from '../image/input-errors.js';
import type { CALL_SETTINGS } from '../../settings/remove.js';
import { onPixelWorker } from '../runtime/pixel-workers.js';
import type { DecodedPhoto } from '../types.js';
import { type EmbeddedJpeg, rawLayout } from './raw-layout.js';

/** How a RAW's pixels are had: the choices of the settings' `raw` row (settings/remove.ts). */
export type RawWay = (typeof CALL_SETTINGS)['raw']['choices'][number];

/** A preview this close to the sensor's size is the camera's full-size rendering (sensors keep a few margin
 * pixels: a 6000-pixel JPEG of a 6096-pixel Canon sensor); a smaller one (Sony's 1616 pixels) is not used. */
const FULL_SIZE_SHARE = 0.9;

export interface DecodedRaw extends DecodedPhoto {
  /** Which way gave the pixels: a RAW without a full-size preview is developed whatever was asked. */
  way: RawWay;
}

function isFullSize(preview: EmbeddedJpeg, sensor: { width: number; height: number } | undefined): boolean {
  if (!sensor) return false;
  const long = (size: { width: number; height: number }) => Math.max(size.width, size.height);
  return long(preview) >= FULL_SIZE_SHARE * long(sensor);
}

/** The upright photo of the RAW `input` (of `kind`), asked to come from `way`. Throws 400-class RmbgErrors. */
export async function decodeRaw(input: Buffer, kind: RawFormat, way: RawWay): Promise<DecodedRaw> {
  if (input.length > LIMITS.maxRawBytes) {
    throw new RmbgError(
      'file_too_large',
      `the ${RAW_FORMATS[kind].name} file is ${input.length} bytes; at most ${LIMITS.maxRawBytes} bytes (${LIMIT_TEXT.maxRawBytes}) are read`,
    );
  }
  const layout = rawLayout(input, kind);
  if (way === 'preview' && layout.preview && isFullSize(layout.preview, layout.sensor)) {
    return { ...(await decodePreview(layout.preview, layout.orientation)), way: 'preview' };
  }
  return { ...(await develop(input, kind)), way: 'develop' };
}

/** The view a viewer shows of a picture stored with TIFF `orientation`: sharp steps, one pipeline each (within one,
 * sharp orders its rotation and mirroring itself). */
const UPRIGHT_STEPS: Record<number, Array<(image: sharp.Sharp) => sharp.Sharp>> = {
  1: [],
  2: [(image) => image.flop()],
  3: [(image) => image.rotate(180)],
  4: [(image) => image.flip()],
  5: [(image) => image.rotate(90), (image) => image.flop()],
  6: [(image) => image.rotate(90)],
  7: [(image) => image.rotate(270), (image) => image.flop()],
  8: [(image) => image.rotate(270)],
};

async function decodePreview(preview: EmbeddedJpeg, orientation: number | undefined): Promise<DecodedPhoto> {
  checkDimensions(preview.width, preview.height); // from its frame header, before any pixel is decoded
  try {
    const jpeg = () => sharp(preview.data, { failOn: 'error', limitInputPixels: LIMITS.maxPixels });
    // A RAW without an Orientation tag (Fujifilm's) leaves it to its JPEG's own EXIF, as a viewer does.
    const turn = orientation ?? (await jpeg().metadata()).orientation ?? 1;
    let image = jpeg().removeAlpha().toColourspace('srgb');
    for (const step of UPRIGHT_STEPS[turn] ?? []) {
      const { data, info } = await step(image).raw().toBuffer({ resolveWithObject: true });
      image = sharp(data, { raw: info });
    }
    const { data, info } = await image.raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    return { pixels: data, width: info.width, height: info.height, channels: 3 };
  } catch (error) {
    throw undecodable('its preview JPEG', error);
  }
}

async function develop(input: Buffer, kind: RawFormat): Promise<DecodedPhoto> {
  let developed: Awaited<ReturnType<typeof onPixelWorker<'raw'>>>;
  try {
    // Copied to the worker: the caller keeps the RAW (its EXIF, a retry).
    developed = await onPixelWorker('raw', { raw: input, maxPixels: LIMITS.maxPixels, maxSide: LIMITS.maxSide });
  } catch (error) {
    throw undecodable(`the ${RAW_FORMATS[kind].name} file`, error);
  }
  // A RAW too big to develop was refused by its header's size, which the check here words as for any photo.
  const { width, height } = 'tooBig' in developed ? developed.tooBig : developed;
  checkDimensions(width, height);
  if ('tooBig' in developed) throw new RmbgError('image_too_many_pixels', `the RAW is ${width}x${height} pixels`);
  return { pixels: bufferOf(developed.pixels), width, height, channels: 3 };
}

function undecodable(what: string, error: unknown): RmbgError {
  return new RmbgError(
    'corrupt_image',
    `the camera RAW cannot be read: ${what} cannot be decoded (${decoderReason(error)}); check that the file opens in your RAW developer`,
    { cause: error },
  );
}
