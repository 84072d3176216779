// The mask applied to the pixels (alpha, background, JPG's flattening) and the foreground's box, on raw buffers.

import type { Rgba } from '../../api/color.js';

export interface ComposeInput {
  /** Raw interleaved pixels, 3 (RGB) or 4 (RGBA) channels, width×height. */
  pixels: Buffer;
  channels: 3 | 4;
  /** One byte per pixel, 0..255. */
  mask: Buffer;
  width: number;
  height: number;
  /** Colour to place under the foreground. */
  background: Rgba | undefined;
  /** JPG cannot keep transparency: whatever stays transparent is flattened onto white. */
  opaque: boolean;
  /** Where the result goes (a reused buffer of at least width×height×its channels bytes); a new one if absent. */
  out?: Uint8Array | undefined;
}

export interface ComposeOutput {
  pixels: Buffer;
  channels: 3 | 4;
}

/** Inclusive pixel bounds. */
export interface Bounds {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** Mask values at or above this count as foreground for the box and crop (a faint halo of 1..7 does not). */
export const FOREGROUND_ALPHA = 8;

const hasForeground = (mask: Buffer, from: number, to: number): boolean => {
  for (let i = from; i < to; i++) if ((mask[i] as number) >= FOREGROUND_ALPHA) return true;
  return false;
};

/** The foreground's box in a one-byte-per-pixel mask, or null; rows are read only outside the box found so far. */
export function maskBounds(mask: Buffer, width: number, height: number): Bounds | null {
  let top = 0;
  while (top < height && !hasForeground(mask, top * width, (top + 1) * width)) top++;
  if (top === height) return null;
  let bottom = height - 1;
  while (!hasForeground(mask, bottom * width, (bottom + 1) * width)) bottom--;
  let left = width;
  let right = -1;
  for (let y = top; y <= bottom; y++) {
    const row = y * width;
    for (let x = 0; x < left; x++) {
      if ((mask[row + x] as number) >= FOREGROUND_ALPHA) {
        left = x;
        break;
      }
    }
    for (let x = width - 1; x > right; x--) {
      if ((mask[row + x] as number) >= FOREGROUND_ALPHA) {
        right = x;
        break;
      }
    }
  }
  return { left, top, right, bottom };
}

/** `bytes` of `out` as a Buffer, or a new Buffer of that many bytes. */
const outputOf = (out: Uint8Array | undefined, bytes: number): Buffer =>
  out ? Buffer.from(out.buffer, out.byteOffset, bytes) : Buffer.allocUnsafe(bytes);

/** The default result (transparent, no colour) without colour arithmetic: the same pixels as composeLoop, faster
 * (bench/RESULTS.md, "What changed in the engine, and why"). */
function transparentLoop({ pixels, channels, mask, width, height, out: into }: ComposeInput): ComposeOutput {
  const pixelCount = width * height;
  const out = outputOf(into, pixelCount * 4);
  for (let i = 0; i < pixelCount; i++) {
    const src = i * channels;
    let a = mask[i] as number;
    if (channels === 4) a = ((a * (pixels[src + 3] as number)) / 255 + 0.5) | 0;
    const dst = i * 4;
    if (a === 0) {
      // a reused buffer holds an earlier photo's bytes
      out[dst] = 0;
      out[dst + 1] = 0;
      out[dst + 2] = 0;
      out[dst + 3] = 0;
      continue;
    }
    out[dst] = pixels[src] as number;
    out[dst + 1] = pixels[src + 1] as number;
    out[dst + 2] = pixels[src + 2] as number;
    out[dst + 3] = a;
  }
  return { pixels: out, channels: 4 };
}

export function compose(input: ComposeInput): ComposeOutput {
  const bgAlpha = input.background ? Math.round(input.background.alpha * 255) : 0;
  if (!input.opaque && bgAlpha === 0) return transparentLoop(input);
  return composeLoop(input);
}

/** The general loop: every option. Exported so a test can hold the fast path to the same pixels. */
export function composeLoop(input: ComposeInput): ComposeOutput {
  const { pixels, channels, mask, width, height, background, opaque } = input;
  const pixelCount = width * height;
  const bgAlpha = background ? Math.round(background.alpha * 255) : 0;
  const outChannels: 3 | 4 = opaque ? 3 : 4;
  const out = outputOf(input.out, pixelCount * outChannels);
  const bgR = background?.r ?? 0;
  const bgG = background?.g ?? 0;
  const bgB = background?.b ?? 0;

  for (let i = 0; i < pixelCount; i++) {
    const src = i * channels;
    // An input that was already transparent stays transparent where it was.
    let a = mask[i] as number;
    if (channels === 4) a = ((a * (pixels[src + 3] as number)) / 255 + 0.5) | 0;
    let r = pixels[src] as number;
    let g = pixels[src + 1] as number;
    let b = pixels[src + 2] as number;
    if (a < 255 && bgAlpha > 0) {
      // "over" operator: foreground (alpha a) over background (alpha bgAlpha), straight alpha out.
      const under = (bgAlpha * (255 - a)) / 255;
      const outA = a + under;
      r = (r * a + bgR * under) / outA;
      g = (g * a + bgG * under) / outA;
      b = (b * a + bgB * under) / outA;
      a = (outA + 0.5) | 0;
    }
    const dst = i * outChannels;
    if (opaque) {
      if (a < 255) {
        r = (r * a + 255 * (255 - a)) / 255;
        g = (g * a + 255 * (255 - a)) / 255;
        b = (b * a + 255 * (255 - a)) / 255;
      }
      out[dst] = r + 0.5;
      out[dst + 1] = g + 0.5;
      out[dst + 2] = b + 0.5;
    } else if (a === 0) {
      // Colour under alpha 0 is invisible; zeroed, PNG compresses it far faster
      // (bench/RESULTS.md, "Figures behind the engine's comments").
      out[dst] = 0;
      out[dst + 1] = 0;
      out[dst + 2] = 0;
      out[dst + 3] = 0;
    } else {
      out[dst] = r + 0.5;
      out[dst + 1] = g + 0.5;
      out[dst + 2] = b + 0.5;
      out[dst + 3] = a;
    }
  }
  return { pixels: out, channels: outChannels };
}
