// Result dimensions: the size's pixel ceiling (and the format's cap, e.g. PNG's), aspect kept, never upscaled.

import { formatMaxPixels } from '../../api/media-types.js';
import { SIZE_MAX_PIXELS, type Format, type Size } from '../../api/options.js';

export function maxResultPixels(size: Size, format: Format): number {
  return Math.min(SIZE_MAX_PIXELS[size], formatMaxPixels(format));
}

/** Largest width×height with the source's aspect that fits maxPixels; the source size when it already fits. */
export function fitWithin(width: number, height: number, maxPixels: number): { width: number; height: number } {
  if (width * height <= maxPixels) return { width, height };
  const scale = Math.sqrt(maxPixels / (width * height));
  let w = Math.max(1, Math.floor(width * scale));
  let h = Math.max(1, Math.floor(height * scale));
  // Floating-point rounding can leave the product one row over the ceiling.
  while (w * h > maxPixels) {
    if (w / width > h / height) w -= 1;
    else h -= 1;
  }
  return { width: w, height: h };
}
