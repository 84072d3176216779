// Photos the API does not take (HEIC/HEIF, AVIF, TIFF), for rmbg's own callers: checked against the API's limits
// from their header, then decoded here (oriented, sRGB) for the engine on this computer, or converted to an image
// the API takes before an upload to a server. `rmbg serve` never calls this: it takes JPG, PNG and WebP only.
// Beside pipeline.ts, above image/ and runtime/: it runs a HEIC's decode (image/heic-decoder.ts) on a pixel worker.

import sharp, { type Sharp } from 'sharp';
import { RmbgError } from '../api/errors.js';
import { LIMIT_TEXT, LIMITS } from '../api/limits.js';
import { CONVERTIBLE_FORMATS, type ConvertibleFormat } from '../api/media-types.js';
import { buildTiff, type Entry } from './image/exif.js';
import { checkByteSize, checkDimensions } from './image/image-probe.js';
import { decoderReason } from './image/input-errors.js';
import { onPixelWorker } from './runtime/pixel-workers.js';
import { bufferOf } from '../platform/thread-transfer.js';
import type { DecodedPhoto } from './types.js';

/** What an upload of a converted photo is: lossless when it fits the API's byte limit. */
export type UploadFormat = 'png' | 'jpeg' | 'webp';

/** Lossy qualities tried in turn for a photo whose PNG is over the byte limit; the first that fits is sent. */
const LOSSY_QUALITIES = [95, 90, 85, 80, 70, 60];

/** The photo decoded for the engine on this computer; throws the same 400 RmbgErrors as the engine's own probe. */
export async function decodePhoto(input: Buffer, format: ConvertibleFormat): Promise<DecodedPhoto> {
  checkByteSize(input);
  const header = await readHeader(input, format);
  const { width = 0, height = 0 } = header;
  checkDimensions(width, height); // before any pixel is decoded: a decompression bomb stops here
  const channels = header.hasAlpha ? 4 : 3;
  const oriented = format === 'heic' ? await heicPipeline(input, header) : sharpPipeline(input);
  const shaped = (channels === 4 ? oriented.ensureAlpha() : oriented.removeAlpha()).toColourspace('srgb');
  try {
    const { data, info } = await shaped.raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    return { pixels: data, width: info.width, height: info.height, channels };
  } catch (error) {
    throw undecodable(format, error);
  }
}

/** The photo as an image the API takes: PNG where it fits the byte limit, else the best JPEG (WebP with alpha) that does. */
export async function convertForUpload(
  input: Buffer,
  format: ConvertibleFormat,
): Promise<{ data: Buffer; format: UploadFormat }> {
  return encodeForUpload(await decodePhoto(input, format), nameOf(format));
}

/** A decoded photo (`name`: its format for people) as an image the API takes, as convertForUpload says. */
export async function encodeForUpload(
  { pixels, width, height, channels }: DecodedPhoto,
  name: string,
): Promise<{ data: Buffer; format: UploadFormat }> {
  const image = () => sharp(pixels, { raw: { width, height, channels } });
  const png = await image().png().toBuffer();
  if (png.length <= LIMITS.maxImageBytes) return { data: png, format: 'png' };
  for (const quality of LOSSY_QUALITIES) {
    const data = await (channels === 4
      ? image().webp({ quality, alphaQuality: 100 })
      : image().jpeg({ quality, chromaSubsampling: '4:4:4' })
    ).toBuffer();
    if (data.length <= LIMITS.maxImageBytes) return { data, format: channels === 4 ? 'webp' : 'jpeg' };
  }
  throw new RmbgError(
    'file_too_large',
    `the ${name} photo does not fit ${LIMIT_TEXT.maxImageBytes} even as a JPEG of quality ${LOSSY_QUALITIES.at(-1)}`,
  );
}

/** Header only (sharp reads a HEIC's header though its libvips cannot decode HEVC); its own pixel limit is off. */
async function readHeader(input: Buffer, format: ConvertibleFormat): Promise<sharp.Metadata> {
  let header: sharp.Metadata;
  try {
    header = await sharp(input, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw undecodable(format, error);
  }
  const pages = header.pages ?? 1;
  if (format === 'tiff' && pages > 1) {
    throw new RmbgError(
      'unsupported_image_format',
      `the TIFF holds ${pages} pages; rmbg takes a single-page TIFF: save the page you want as its own file`,
    );
  }
  return header;
}

/** AVIF and TIFF: sharp decodes them, EXIF/TIFF orientation applied; truncated data fails instead of decoding grey. */
function sharpPipeline(input: Buffer): Sharp {
  return sharp(input, { failOn: 'error', limitInputPixels: LIMITS.maxPixels }).rotate();
}

/**
 * HEIC: libheif (WebAssembly) decodes the primary image with its rotation and mirroring (irot/imir) applied; a
 * HEIC's EXIF orientation is not applied again (HEIF readers ignore it). Its ICC profile (Display P3 on iPhones)
 * travels with the pixels in an uncompressed TIFF, so sharp converts them to sRGB as it does for a tagged JPG.
 */
async function heicPipeline(input: Buffer, header: sharp.Metadata): Promise<Sharp> {
  const size = { width: header.width ?? 0, height: header.height ?? 0 };
  let rgba: Buffer | undefined;
  try {
    // On a pixel worker: the input is copied there, as the caller keeps it (its EXIF, an upload's retry).
    const decoded = await onPixelWorker('heic', { heic: input, ...size });
    rgba = decoded && bufferOf(decoded);
  } catch (error) {
    throw undecodable('heic', error);
  }
  if (!rgba) throw undecodable('heic', new Error(`no image of ${size.width}x${size.height} pixels in it`));
  return header.icc ? sharp(taggedTiff(rgba, size, header.icc)) : sharp(rgba, { raw: { ...size, channels: 4 } });
}

/** An uncompressed RGBA TIFF of `rgba` carrying the ICC profile: a small header in front of the pixels. */
function taggedTiff(rgba: Buffer, { width, height }: { width: number; height: number }, icc: Buffer): Buffer {
  const short = (...values: number[]) => Buffer.from(new Uint16Array(values).buffer);
  const long = (value: number) => Buffer.from(new Uint32Array([value]).buffer);
  const stripOffset = { tag: 273, type: 4, count: 1, value: long(0) };
  const entries: Entry[] = [
    { tag: 256, type: 4, count: 1, value: long(width) },
    { tag: 257, type: 4, count: 1, value: long(height) },
    { tag: 258, type: 3, count: 4, value: short(8, 8, 8, 8) }, // bits per sample
    { tag: 259, type: 3, count: 1, value: short(1, 0) }, // no compression
    { tag: 262, type: 3, count: 1, value: short(2, 0) }, // RGB
    stripOffset,
    { tag: 277, type: 3, count: 1, value: short(4, 0) }, // samples per pixel
    { tag: 278, type: 4, count: 1, value: long(height) }, // one strip
    { tag: 279, type: 4, count: 1, value: long(rgba.length) },
    { tag: 338, type: 3, count: 1, value: short(2, 0) }, // the fourth sample is unassociated alpha
    { tag: 34675, type: 7, count: icc.length, value: icc },
  ];
  const headerLength = buildTiff({ ifd0: entries, exif: [], gps: [] }).length;
  stripOffset.value = long(headerLength);
  return Buffer.concat([buildTiff({ ifd0: entries, exif: [], gps: [] }), rgba]);
}

function nameOf(format: ConvertibleFormat): string {
  return CONVERTIBLE_FORMATS[format].name;
}

function undecodable(format: ConvertibleFormat, error: unknown): RmbgError {
  return new RmbgError(
    'corrupt_image',
    `the ${nameOf(format)} image cannot be decoded: it is truncated or corrupt (${decoderReason(error)}); check that the file opens in an image viewer`,
    { cause: error },
  );
}
