// The cutout's alpha as a grayscale PNG (`--mask`): 8 bits, or 16 for a 16-bit photo, so that it lays over the
// photographer's own development at the depth they work in.

import sharp from 'sharp';
import type { Dimensions } from './mask-upsample.js';

/** 8-bit values to 16 bits: ×257 maps 0..255 onto 0..65535 exactly (255 → 65535). */
export function widenTo16(bytes: Uint8Array): Uint16Array {
  const wide = new Uint16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) wide[i] = (bytes[i] as number) * 257;
  return wide;
}

/** A one-byte-per-pixel mask as a grayscale PNG of `depth` bits. */
export function encodeMaskPng(mask: Buffer, { width, height }: Dimensions, depth: 8 | 16): Promise<Buffer> {
  const raw = { width, height, channels: 1 } as const;
  if (depth === 8) return sharp(mask, { raw }).toColourspace('b-w').png().toBuffer();
  return sharp(widenTo16(mask), { raw }).toColourspace('grey16').png().toBuffer();
}
