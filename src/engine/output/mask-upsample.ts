// The mask scaled up, bilinear and centre-aligned in integers: faster and better placed than libvips' linear
// (bench/RESULTS.md, "Issue #9: large photos, ORT's arena"). Shrinking needs a wider filter: sharp's.

export interface Dimensions {
  width: number;
  height: number;
}

/** Fixed-point weights: 10 bits per axis, so a vertical then a horizontal blend fit in 31 bits. */
const WEIGHT_BITS = 10;
const ONE = 1 << WEIGHT_BITS;
const ROUND = 1 << (2 * WEIGHT_BITS - 1);

/** True when `to` is at least `from` on both axes: the case upsampleMask handles. */
export function isUpsizing(from: Dimensions, to: Dimensions): boolean {
  return to.width >= from.width && to.height >= from.height;
}

/** Per destination index: the source sample below it and the next one's weight, centres aligned, edges clamped. */
function taps(from: number, to: number): { index: Int32Array; weight: Int32Array } {
  const index = new Int32Array(to);
  const weight = new Int32Array(to);
  const scale = from / to;
  for (let d = 0; d < to; d++) {
    const s = Math.min(Math.max((d + 0.5) * scale - 0.5, 0), from - 1);
    const i = Math.min(Math.floor(s), Math.max(from - 2, 0));
    index[d] = i;
    weight[d] = Math.round((s - i) * ONE);
  }
  return { index, weight };
}

/** A one-byte-per-pixel mask of size `from` resampled to `to` (both axes upsizing, see isUpsizing), into `into` (a
 * reused buffer of at least to.width×to.height bytes) or a new one. */
export function upsampleMask(mask: Uint8Array, from: Dimensions, to: Dimensions, into?: Uint8Array): Buffer {
  if (!isUpsizing(from, to))
    throw new RangeError(`upsampleMask only upsizes (${from.width}×${from.height} → ${to.width}×${to.height})`);
  const bytes = to.width * to.height;
  const out = into ? Buffer.from(into.buffer, into.byteOffset, bytes) : Buffer.allocUnsafe(bytes);
  const columns = taps(from.width, to.width);
  const rows = taps(from.height, to.height);
  // Destination columns blending source columns i and i + 1 are spanStart[i] until spanStart[i + 1] (the
  // column index only grows, so each source column has one span; a column with no span is skipped).
  const spanStart = new Int32Array(from.width + 1).fill(to.width);
  for (let x = to.width - 1; x >= 0; x--) spanStart[columns.index[x] as number] = x;
  for (let i = from.width - 1; i >= 0; i--) spanStart[i] = Math.min(spanStart[i] as number, spanStart[i + 1] as number);
  // A source one pixel wide or high has no second tap; its weight is 0, so reading the same pixel is harmless.
  const nextRow = from.height > 1 ? from.width : 0;
  const last = Math.max(from.width - 2, 0);
  const blended = new Int32Array(from.width + 1); // the two source rows of this output row, blended vertically
  for (let y = 0; y < to.height; y++) {
    const above = (rows.index[y] as number) * from.width;
    const below = above + nextRow;
    const wy = rows.weight[y] as number;
    for (let x = 0; x < from.width; x++)
      blended[x] = (mask[above + x] as number) * (ONE - wy) + (mask[below + x] as number) * wy;
    blended[from.width] = blended[from.width - 1] as number;
    const o = y * to.width;
    // Spans i .. last cover every destination column (spanStart[last + 1] is to.width).
    let i = 0;
    while (i <= last) {
      const a = blended[i] as number;
      // Most of a mask is flat (background or subject): a run of equal blended values fills at once.
      let j = i;
      while (j <= last && blended[j + 1] === a) j++;
      if (j > i) {
        out.fill((a * ONE + ROUND) >>> (2 * WEIGHT_BITS), o + (spanStart[i] as number), o + (spanStart[j] as number));
        i = j;
        continue;
      }
      const step = (blended[i + 1] as number) - a;
      for (let x = spanStart[i] as number, end = spanStart[i + 1] as number; x < end; x++) {
        out[o + x] = (a * ONE + step * (columns.weight[x] as number) + ROUND) >>> (2 * WEIGHT_BITS);
      }
      i++;
    }
  }
  return out;
}
