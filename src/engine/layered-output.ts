// What rmbg's own callers get on this computer beyond the API's formats: the mask file (--mask) and the layered
// formats (psd, tiff). Both are made from the photo's own pixels, re-read at the result's size and crop, so that
// its depth (16 bits) and ICC profile survive: the cutout's pipeline works in 8-bit sRGB.

import sharp, { type Region, type Sharp } from 'sharp';
import type { Rgba } from '../api/color.js';
import { LIMITS } from '../api/limits.js';
import { convertibleFormatOf, OUTPUT_FORMATS, type LocalFormat } from '../api/media-types.js';
import type { Format } from '../api/options.js';
import { encodeMaskPng, widenTo16 } from './output/mask-encode.js';
import type { Dimensions } from './output/mask-upsample.js';
import { encodePsd } from './output/psd-encode.js';
import { encodeTiff } from './output/tiff-encode.js';
import { rawKindOf } from './raw/raw-kind.js';
import type { DecodedPhoto } from './types.js';

/** The photo as the layered outputs read it. */
export interface PhotoSource {
  /** A sharp pipeline on the photo, oriented, in its own colour space. */
  open(): Sharp;
  depth: 8 | 16;
  hasAlpha: boolean;
  /** An RGB photo's ICC profile, kept with its untouched pixels; undefined: the pixels are (converted to) sRGB. */
  icc: Buffer | undefined;
}

/** The result's size, and with crop its region on the canvas. */
export interface LayerGeometry {
  size: Dimensions;
  region?: Region | undefined;
}

/** The format asked for when it is a layered one (psd, tiff), else undefined. */
export function layeredFormatOf(format: Format): LocalFormat | undefined {
  return format !== 'auto' && OUTPUT_FORMATS[format].encoder.by === 'layers' ? (format as LocalFormat) : undefined;
}

/**
 * The photo's own bytes when sharp reads them: an API image as given, or the `original` a TIFF or AVIF was decoded
 * from (its 16 bits and profile are lost in the engine's decoded copy); else the decoded pixels (a HEIC: 8-bit sRGB).
 */
export async function photoSourceOf(input: Buffer | DecodedPhoto, original?: Buffer): Promise<PhotoSource> {
  // A camera RAW starts like a TIFF, but sharp would read only its first IFD (a thumbnail): use what was decoded.
  const isPlainFile =
    original && ['tiff', 'avif'].includes(convertibleFormatOf(original) ?? '') && !rawKindOf(original);
  const readable = isPlainFile ? original : undefined;
  const bytes = Buffer.isBuffer(input) ? input : readable;
  if (!bytes) {
    const { pixels, width, height, channels } = input as DecodedPhoto;
    return {
      open: () => sharp(pixels, { raw: { width, height, channels } }),
      depth: 8,
      hasAlpha: channels === 4,
      icc: undefined,
    };
  }
  const meta = await sharp(bytes).metadata();
  // A CMYK or grey photo's profile does not describe RGB pixels: those are converted to sRGB instead.
  const rgb = meta.space === 'srgb' || meta.space === 'rgb16';
  return {
    open: () => sharp(bytes, { failOn: 'error', limitInputPixels: LIMITS.maxPixels }).rotate(),
    depth: meta.depth === 'ushort' ? 16 : 8,
    hasAlpha: Boolean(meta.hasAlpha),
    icc: rgb ? meta.icc : undefined,
  };
}

/** The photo at the result's size and crop, its profile kept where it has one. */
function photoAt(source: PhotoSource, { size, region }: LayerGeometry): Sharp {
  const image = region ? source.open().extract(region) : source.open();
  const sized = image.resize(size.width, size.height, { fit: 'fill' });
  return source.icc ? sized.keepIccProfile() : sized;
}

/** The result's alpha: the mask, times the photo's own alpha where it has one (as the cutout's compose does). */
async function alphaOf(source: PhotoSource, geometry: LayerGeometry, mask: Buffer): Promise<Buffer> {
  if (!source.hasAlpha) return mask;
  const own = await photoAt(source, geometry).extractChannel(3).toColourspace('b-w').raw({ depth: 'uchar' }).toBuffer();
  const alpha = Buffer.allocUnsafe(mask.length);
  for (let i = 0; i < mask.length; i++) alpha[i] = ((mask[i] as number) * (own[i] as number)) / 255 + 0.5;
  return alpha;
}

/** The photo without its alpha, as an uncompressed TIFF that keeps its depth and profile. */
function withoutAlpha(photo: Sharp, depth: 8 | 16): Promise<Buffer> {
  return photo
    .removeAlpha()
    .toColourspace(depth === 16 ? 'rgb16' : 'srgb')
    .tiff({ compression: 'none' })
    .toBuffer();
}

/** The mask file: the photo's alpha at its full size, 16-bit for a 16-bit photo. */
export async function encodeMaskFile(source: PhotoSource, mask: Buffer, canvas: Dimensions): Promise<Buffer> {
  return encodeMaskPng(await alphaOf(source, { size: canvas }, mask), canvas, source.depth);
}

/** The layered file: a PSD (the photo as a layer, the mask as its layer mask) or a TIFF with an unassociated alpha. */
export async function encodeLayered(
  format: LocalFormat,
  source: PhotoSource,
  geometry: LayerGeometry,
  mask: Buffer,
  background: Rgba | undefined,
): Promise<Buffer> {
  const { size } = geometry;
  if (format === 'tiff') {
    const alpha = await alphaOf(source, geometry, mask);
    const depth = source.depth;
    // sharp drops an alpha after joining channels, so a photo with its own alpha loses it in a lossless copy first.
    const photo = source.hasAlpha
      ? sharp(await withoutAlpha(photoAt(source, geometry), depth))
      : photoAt(source, geometry);
    return encodeTiff({
      photo,
      alpha: depth === 16 ? widenTo16(alpha) : alpha,
      size,
      depth,
      background,
      keepIcc: !!source.icc,
    });
  }
  const channels = source.hasAlpha ? 4 : 3;
  const photo = photoAt(source, geometry).toColourspace('srgb');
  const pixels = await (channels === 4 ? photo.ensureAlpha() : photo.removeAlpha()).raw({ depth: 'uchar' }).toBuffer();
  return encodePsd({ ...size, pixels, channels, mask, background, icc: source.icc });
}
