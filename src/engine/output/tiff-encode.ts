// A TIFF of the photo with the cutout's alpha as an unassociated alpha (ExtraSamples = 2, as libvips writes an
// RGBA TIFF), at the photo's depth and with its ICC profile: the pixels are the photo's own, never converted.

import type { Sharp } from 'sharp';
import type { Rgba } from '../../api/color.js';
import type { Dimensions } from './mask-upsample.js';

export interface TiffInput {
  /** The photo at the result's size and crop, RGB, in its own colour space (engine/layered-output.ts). */
  photo: Sharp;
  /** The result's alpha: 8-bit bytes, or 16-bit values for a 16-bit photo. */
  alpha: Uint8Array | Uint16Array;
  size: Dimensions;
  depth: 8 | 16;
  /** Flattened onto this colour (no alpha left), as the other formats are. */
  background: Rgba | undefined;
  /** Keep the photo's ICC profile with its untouched pixels (an RGB photo's); else sRGB. */
  keepIcc: boolean;
}

export function encodeTiff({ photo, alpha, size, depth, background, keepIcc }: TiffInput): Promise<Buffer> {
  // sharp takes a typed array's depth from its type (a Uint16Array is 16-bit), though its types name only Buffer.
  let image = photo.joinChannel(alpha as Buffer, { raw: { ...size, channels: 1 } });
  if (background) image = image.flatten({ background: { r: background.r, g: background.g, b: background.b } });
  if (keepIcc) image = image.keepIccProfile();
  return image
    .toColourspace(depth === 16 ? 'rgb16' : 'srgb')
    .tiff({ compression: 'deflate', predictor: 'horizontal' })
    .toBuffer();
}
