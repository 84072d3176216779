// Photos the API does not take (HEIC/HEIF, AVIF, TIFF, camera RAW), made ready for a remover on this computer:
// decoded for the local engine, converted to an image the API takes for a server. engine/decode-input.ts (and
// through it the HEIC decoder) and engine/raw/decode-raw.ts are loaded only when such a photo is met, so a batch of
// JPGs never loads them.

import { RmbgError } from '../api/errors.js';
import {
  convertibleFormatOf,
  PHOTO_FORMATS_TEXT,
  RAW_FORMATS,
  type RawFormat,
  supportedFormatOf,
} from '../api/media-types.js';
import type { RawWay } from '../engine/raw/decode-raw.js';
import { rawKindOf } from '../engine/raw/raw-kind.js';
import type { DecodedPhoto } from '../engine/types.js';
import { CALL_SETTINGS } from '../settings/remove.js';

/** How a photo is read: how a camera RAW's pixels are had (settings/remove.ts `raw`). */
export interface PhotoReading {
  raw?: RawWay | undefined;
}

/** What the local engine takes: an API image as it is, another photo decoded. */
export async function engineInput(image: Buffer, reading: PhotoReading = {}): Promise<Buffer | DecodedPhoto> {
  const kind = rawKindOf(image); // before the TIFF test: most RAWs are TIFF-structured
  if (kind) return rawPhoto(image, kind, reading);
  const format = convertibleFormatOf(image);
  if (!format) return readable(image);
  const { decodePhoto } = await import('../engine/decode-input.js');
  return decodePhoto(image, format);
}

/** An image the API takes, as it is; anything else is refused with what rmbg reads on this computer, not the API's
 * "JPG, PNG or WebP only" (which the engine's probe says, for `rmbg serve`). */
async function readable(image: Buffer): Promise<Buffer> {
  if (image.length === 0 || supportedFormatOf(image)) return image; // an empty file: the probe's own words
  const { whatDataIs } = await import('../engine/image/image-probe.js');
  throw new RmbgError(
    'unsupported_image_format',
    `${whatDataIs(image)}; on this computer rmbg reads ${PHOTO_FORMATS_TEXT}`,
  );
}

/** What goes to a server: an API image as it is, another photo converted (engine/decode-input.ts
 * `convertForUpload`; a RAW read as on this computer, then encoded the same way). */
export async function uploadOf(image: Buffer, reading: PhotoReading = {}): Promise<Buffer> {
  const kind = rawKindOf(image);
  const format = convertibleFormatOf(image);
  if (!kind && !format) return image; // the server says what it takes
  const { convertForUpload, encodeForUpload } = await import('../engine/decode-input.js');
  if (kind) return (await encodeForUpload(await rawPhoto(image, kind, reading), RAW_FORMATS[kind].name)).data;
  return format ? (await convertForUpload(image, format)).data : image;
}

async function rawPhoto(image: Buffer, kind: RawFormat, reading: PhotoReading): Promise<DecodedPhoto> {
  const { decodeRaw } = await import('../engine/raw/decode-raw.js');
  return decodeRaw(image, kind, reading.raw ?? CALL_SETTINGS.raw.default);
}
