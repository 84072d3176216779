// The input gate: every check before any pixel is decoded, so a hostile upload is refused in milliseconds.

import sharp from 'sharp';
import { RmbgError } from '../../api/errors.js';
import { LIMIT_TEXT, LIMITS } from '../../api/limits.js';
import { detectImageSignature, type SupportedFormat } from './image-signature.js';
import { ACCEPTED_FORMATS, animatedImage, corruptImage, decoderReason, unsupportedFormat } from './input-errors.js';
import { pngChunks } from './png-chunks.js';
import { VP8X_ANIMATION_FLAG, webpChunks } from './webp-chunks.js';

export interface ProbedImage {
  format: SupportedFormat;
  /** Stored size, before EXIF orientation. */
  width: number;
  height: number;
  /** After EXIF orientation (5-8 swap sides). */
  orientedWidth: number;
  orientedHeight: number;
  /** EXIF orientation 1..8; 1 when absent or invalid. */
  orientation: number;
  hasAlpha: boolean;
  channels: number;
  /** libvips interpretation, e.g. srgb, cmyk, b-w, rgb16. */
  space: string;
  /** libvips band format, e.g. uchar, ushort. */
  depth: string;
  isPalette: boolean;
}

const formatCount = (n: number): string => n.toLocaleString('en-US');

export function checkByteSize(input: Buffer): void {
  if (input.length === 0) {
    throw new RmbgError('corrupt_image', `the image is empty (0 bytes); send a ${ACCEPTED_FORMATS} file`);
  }
  if (input.length > LIMITS.maxImageBytes) {
    throw new RmbgError(
      'file_too_large',
      `the image is ${formatCount(input.length)} bytes; at most ${formatCount(LIMITS.maxImageBytes)} bytes (${LIMIT_TEXT.maxImageBytes}) are allowed`,
    );
  }
}

function detectFormat(input: Buffer): SupportedFormat {
  const signature = detectImageSignature(input);
  if (signature.supported) return signature.format;
  throw unsupportedFormat(whatDataIs(input));
}

/** What data that is no image the API takes is, in words: "the data is GIF", or its first bytes. */
export function whatDataIs(input: Buffer): string {
  const signature = detectImageSignature(input);
  if (signature.supported) return `the data is ${signature.format.toUpperCase()}`;
  return signature.name === 'unknown'
    ? `the data is not a recognizable image (it starts with bytes ${input
        .subarray(0, 8)
        .toString('hex')
        .replace(/(..)(?!$)/g, '$1 ')})`
    : `the data is ${signature.name}`;
}

/** libvips reports no APNG and skips the last IDAT's CRC, so the chunks are walked here; one frame passes. */
function checkPngStructure(input: Buffer): void {
  let first = true;
  let seenIdat = false;
  for (const chunk of pngChunks(input)) {
    if (first && chunk.type !== 'IHDR') {
      throw corruptImage(`the PNG is corrupt: its first chunk is ${JSON.stringify(chunk.type)}, not IHDR`);
    }
    first = false;
    if (chunk.type === 'IDAT') seenIdat = true;
    if (chunk.type === 'acTL' && !seenIdat && chunk.length >= 4) {
      const frames = chunk.data.readUInt32BE(0);
      if (frames > 1) throw animatedImage(`an animated PNG (APNG, ${formatCount(frames)} frames)`);
    }
  }
  if (first) throw corruptImage('the PNG is corrupt: it has no chunks after the signature');
}

/** The VP8X animation flag is what libwebp honours; ANMF frames are counted so a one-frame "animation" passes. */
function checkWebpStructure(input: Buffer): void {
  let flagged = false;
  let frames = 0;
  for (const chunk of webpChunks(input)) {
    if (chunk.fourcc === 'VP8X' && chunk.data.length > 0)
      flagged = ((chunk.data[0] as number) & VP8X_ANIMATION_FLAG) !== 0;
    if (chunk.fourcc === 'ANMF') frames++;
  }
  if (frames > 1 || (flagged && frames === 0)) {
    throw animatedImage(`an animated WebP (${frames > 1 ? `${formatCount(frames)} frames` : 'animation flag set'})`);
  }
}

/** Header only: sharp's metadata() does not decode pixels. Its own pixel limit is off, so our limits speak. */
async function readHeader(input: Buffer, format: SupportedFormat): Promise<sharp.Metadata> {
  let metadata: sharp.Metadata;
  try {
    metadata = await sharp(input, { limitInputPixels: false, failOn: 'error' }).metadata();
  } catch (error) {
    throw corruptImage(`the ${format.toUpperCase()} header cannot be read (${decoderReason(error)})`, error);
  }
  if (metadata.format !== format) {
    throw corruptImage(`the data starts like a ${format.toUpperCase()} but reads as ${String(metadata.format)}`);
  }
  if ((metadata.pages ?? 1) > 1) throw animatedImage(`animated (${formatCount(metadata.pages ?? 0)} frames)`);
  return metadata;
}

export function checkDimensions(width: number, height: number): void {
  const { minSide, maxSide, maxPixels } = LIMITS;
  if (![width, height].every((side) => Number.isInteger(side) && side >= minSide && side <= maxSide)) {
    throw new RmbgError(
      'image_dimensions_out_of_range',
      `the image is ${width}x${height} pixels; each side must be ${minSide} to ${maxSide} pixels`,
    );
  }
  if (width * height > maxPixels) {
    throw new RmbgError(
      'image_too_many_pixels',
      `the image is ${width}x${height} = ${formatCount(width * height)} pixels; at most ${formatCount(maxPixels)} pixels (${LIMIT_TEXT.maxPixels}) are allowed`,
    );
  }
}

/** A tag outside 1..8 names no transform: the image is taken as stored. */
function validOrientation(tag: number | undefined): number {
  return tag !== undefined && Number.isInteger(tag) && tag >= 1 && tag <= 8 ? tag : 1;
}

/**
 * Checks an image before decoding and describes it; throws a 400 RmbgError. A truncated JPEG shows only when
 * decoding: decode with sharp's failOn 'truncated' or stricter.
 */
export async function probeImage(input: Buffer): Promise<ProbedImage> {
  checkByteSize(input);
  const format = detectFormat(input);
  if (format === 'png') checkPngStructure(input);
  if (format === 'webp') checkWebpStructure(input);
  const metadata = await readHeader(input, format);
  const { width = 0, height = 0 } = metadata;
  checkDimensions(width, height);
  const orientation = validOrientation(metadata.orientation);
  const swapsSides = orientation >= 5;
  return {
    format,
    width,
    height,
    orientedWidth: swapsSides ? height : width,
    orientedHeight: swapsSides ? width : height,
    orientation,
    hasAlpha: metadata.hasAlpha,
    channels: metadata.channels,
    space: metadata.space,
    depth: metadata.depth,
    isPalette: metadata.isPalette,
  };
}
