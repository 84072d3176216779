// Photos the API does not take (HEIC/HEIF, AVIF, TIFF), made ready for a remover on this computer: decoded for the
// local engine, converted to an image the API takes for a server. engine/decode-input.ts (and through it the HEIC
// decoder) is loaded only when such a photo is met, so a batch of JPGs never loads it.

import { convertibleFormatOf } from '../api/media-types.js';
import type { DecodedPhoto } from '../engine/types.js';

/** What the local engine takes: an API image as it is, another photo decoded. */
export async function engineInput(image: Buffer): Promise<Buffer | DecodedPhoto> {
  const format = convertibleFormatOf(image);
  if (!format) return image;
  const { decodePhoto } = await import('../engine/decode-input.js');
  return decodePhoto(image, format);
}

/** What goes to a server: an API image as it is, another photo converted (engine/decode-input.ts
 * `convertForUpload`). */
export async function uploadOf(image: Buffer): Promise<Buffer> {
  const format = convertibleFormatOf(image);
  if (!format) return image;
  const { convertForUpload } = await import('../engine/decode-input.js');
  return (await convertForUpload(image, format)).data;
}
