// The foreground's own colour under a soft mask, by blur fusion (Forte & Pitié, "Approximate Fast Foreground Colour
// Estimation", ICIP 2021): a photo's pixel at the edge mixes the subject with the old background, and written as it
// is under a soft alpha it carries that background onto the new one (a halo). Two passes of
// F = F̄ + α(I − αF̄ − (1 − α)B̄), F̄ and B̄ the local means of the foreground and background, weighted by α and 1 − α
// (box blurs of 90 then 6 pixels). The means are smooth, so they are computed on a grid of at most GRID_PIXELS
// (the photo itself up to that size) and read bilinearly; the formula runs at full size, only where the mask is soft.
// Measured against known foreground colours in bench/RESULTS.md ("Issue #45: clean edges").

import { SCRATCH } from './scratch-buffers.js';

/** A result's pixels (changed in place) and its mask at their size. */
export interface ForegroundImage {
  /** Interleaved, `channels` per pixel (a fourth, the input's own alpha, is left as it is). */
  pixels: Uint8Array;
  channels: 3 | 4;
  mask: Uint8Array;
  width: number;
  height: number;
}

/** The passes' box radii in the photo's pixels: the paper's 90- and 6-pixel windows (cv2.blur's kernel sizes). */
const RADII = [45, 3] as const;
/** The means' grid: a photo larger than this is averaged down to it (a 12 MP photo: cells of 14×14 pixels; the mask itself
 * came from the model's 1024² plane). */
const GRID_PIXELS = 1 << 16;
/** Mask values estimated: below 1 % (a model's faint haze, often most of the background) or above 99 % the colour
 * changes a result by at most 2 levels, and the work is per pixel. */
const SOFT_FROM = 3;
const SOFT_TO = 252;
/** Keeps a ratio of blurred sums finite where the weights are 0. */
const EPSILON = 1e-5;

/** Whether any pixel is soft enough to estimate (SOFT_FROM..SOFT_TO): without one there is nothing to do. */
function hasSoftEdge(mask: Uint8Array): boolean {
  for (let i = 0; i < mask.length; i++) {
    const a = mask[i] as number;
    if (a >= SOFT_FROM && a <= SOFT_TO) return true;
  }
  return false;
}

/** Box means of `plane` (width×height), radius `r`, the window clipped to the plane; `temp` holds the rows' pass,
 * `column` (width floats) the columns' running sums, so both passes read memory in order. */
function boxMean(
  plane: Float32Array,
  width: number,
  height: number,
  r: number,
  temp: Float32Array,
  column: Float64Array,
): void {
  for (let y = 0; y < height; y++) {
    const row = y * width;
    let sum = 0;
    for (let x = 0; x < Math.min(r, width); x++) sum += plane[row + x] as number;
    for (let x = 0; x < width; x++) {
      if (x + r < width) sum += plane[row + x + r] as number;
      if (x - r - 1 >= 0) sum -= plane[row + x - r - 1] as number;
      temp[row + x] = sum / (Math.min(x + r, width - 1) - Math.max(x - r, 0) + 1);
    }
  }
  column.fill(0);
  for (let y = 0; y < Math.min(r, height); y++)
    for (let x = 0; x < width; x++) column[x] = (column[x] as number) + (temp[y * width + x] as number);
  for (let y = 0; y < height; y++) {
    const adding = y + r < height ? (y + r) * width : -1;
    const leaving = y - r - 1 >= 0 ? (y - r - 1) * width : -1;
    const count = Math.min(y + r, height - 1) - Math.max(y - r, 0) + 1;
    const row = y * width;
    for (let x = 0; x < width; x++) {
      let sum = column[x] as number;
      if (adding >= 0) sum += temp[adding + x] as number;
      if (leaving >= 0) sum -= temp[leaving + x] as number;
      column[x] = sum;
      plane[row + x] = sum / count;
    }
  }
}

/** The grid's planes: alpha, then three per colour quantity (red, green, blue). */
interface Grid {
  width: number;
  height: number;
  /** Photo pixels per cell side. */
  scale: number;
  alpha: Float32Array;
  /** The photo's colour, then F̄ once estimated. */
  colour: Float32Array[];
  /** F·α, blurred, then F̄. */
  fore: Float32Array[];
  /** B·(1 − α), blurred, then B̄. */
  back: Float32Array[];
  temp: Float32Array;
}

/** The photo averaged onto the grid: per cell the mean alpha (0..1), colour and colour × alpha (0..255). */
function gridOf(image: ForegroundImage, take: (length: number) => Float32Array): Grid {
  const { pixels, channels, mask, width, height } = image;
  const scale = Math.max(1, Math.ceil(Math.sqrt((width * height) / GRID_PIXELS)));
  const gw = Math.ceil(width / scale);
  const gh = Math.ceil(height / scale);
  const cells = gw * gh;
  const plane = () => take(cells).fill(0);
  const grid: Grid = {
    width: gw,
    height: gh,
    scale,
    alpha: plane(),
    colour: [plane(), plane(), plane()],
    fore: [plane(), plane(), plane()],
    back: [plane(), plane(), plane()],
    temp: take(cells),
  };
  // Large cells are sampled every other row and column: a mean of 49 pixels or more, a quarter of the reads.
  const stride = scale >= 7 ? 2 : 1;
  const step = (y: number) => (stride === 1 || (y % scale) + stride < scale ? stride : scale - (y % scale));
  const sampled = (from: number, size: number, limit: number) =>
    Math.ceil((Math.min(from + size, limit) - from) / stride);
  const [cr, cg, cb] = grid.colour as [Float32Array, Float32Array, Float32Array];
  const [fr, fg, fb] = grid.fore as [Float32Array, Float32Array, Float32Array];
  for (let y = 0; y < height; y += step(y)) {
    const cellRow = Math.floor(y / scale) * gw;
    for (let gx = 0; gx < gw; gx++) {
      // One cell's pixels of this row, summed in locals: one write per cell and row, not per pixel.
      let sa = 0;
      let sr = 0;
      let sg = 0;
      let sb = 0;
      let sfr = 0;
      let sfg = 0;
      let sfb = 0;
      for (let x = gx * scale, end = Math.min(x + scale, width); x < end; x += stride) {
        const i = y * width + x;
        const a = (mask[i] as number) / 255;
        const p = i * channels;
        const r = pixels[p] as number;
        const g = pixels[p + 1] as number;
        const b = pixels[p + 2] as number;
        sa += a;
        sr += r;
        sg += g;
        sb += b;
        sfr += r * a;
        sfg += g * a;
        sfb += b * a;
      }
      const c = cellRow + gx;
      grid.alpha[c] = (grid.alpha[c] as number) + sa;
      cr[c] = (cr[c] as number) + sr;
      cg[c] = (cg[c] as number) + sg;
      cb[c] = (cb[c] as number) + sb;
      fr[c] = (fr[c] as number) + sfr;
      fg[c] = (fg[c] as number) + sfg;
      fb[c] = (fb[c] as number) + sfb;
    }
  }
  for (let gy = 0; gy < gh; gy++) {
    const rows = sampled(gy * scale, scale, height);
    for (let gx = 0; gx < gw; gx++) {
      const n = rows * sampled(gx * scale, scale, width);
      const c = gy * gw + gx;
      grid.alpha[c] = (grid.alpha[c] as number) / n;
      for (let k = 0; k < 3; k++) {
        const colour = grid.colour[k] as Float32Array;
        const fore = grid.fore[k] as Float32Array;
        colour[c] = (colour[c] as number) / n;
        fore[c] = (fore[c] as number) / n;
        (grid.back[k] as Float32Array)[c] = (colour[c] as number) - (fore[c] as number); // B·(1 − α), with B = I
      }
    }
  }
  return grid;
}

/** One pass: fore and back hold F·α and B·(1 − α); they become F̄ and B̄ (radius r), and with `estimate` colour
 * (the photo's) becomes the pass's F. */
function fusionPass(grid: Grid, alpha: Float32Array, r: number, estimate: boolean): void {
  const { width, height, temp } = grid;
  const column = new Float64Array(width);
  for (const plane of [...grid.fore, ...grid.back, alpha]) boxMean(plane, width, height, r, temp, column);
  for (let c = 0; c < width * height; c++) {
    const blurredAlpha = alpha[c] as number;
    const a = grid.alpha[c] as number;
    for (let k = 0; k < 3; k++) {
      const fore = grid.fore[k] as Float32Array;
      const back = grid.back[k] as Float32Array;
      const colour = grid.colour[k] as Float32Array;
      const f = (fore[c] as number) / (blurredAlpha + EPSILON);
      const b = (back[c] as number) / (1 - blurredAlpha + EPSILON);
      fore[c] = f;
      back[c] = b;
      if (estimate) colour[c] = Math.min(255, Math.max(0, f + a * ((colour[c] as number) - a * f - (1 - a) * b)));
    }
  }
}

/** Blur fusion's two passes on the grid: fore and back end as the second pass's F̄ and B̄. */
function meansOf(grid: Grid, take: (length: number) => Float32Array): void {
  const cells = grid.width * grid.height;
  const blurredAlpha = take(cells);
  const r = (radius: number) => Math.max(1, Math.round(radius / grid.scale));
  blurredAlpha.set(grid.alpha);
  fusionPass(grid, blurredAlpha, r(RADII[0]), true);
  // The second pass's F is the first's estimate (in colour), its B the first's B̄ (in back): weighted again.
  for (let c = 0; c < cells; c++) {
    const a = grid.alpha[c] as number;
    for (let k = 0; k < 3; k++) {
      (grid.fore[k] as Float32Array)[c] = ((grid.colour[k] as Float32Array)[c] as number) * a;
      (grid.back[k] as Float32Array)[c] = ((grid.back[k] as Float32Array)[c] as number) * (1 - a);
    }
  }
  blurredAlpha.set(grid.alpha);
  fusionPass(grid, blurredAlpha, r(RADII[1]), false); // its F is made at full size
}

/** The colours of `image`'s soft pixels (SOFT_FROM..SOFT_TO) replaced by the foreground's estimated colour, in place. */
export function estimateForeground(image: ForegroundImage): void {
  if (!hasSoftEdge(image.mask)) return;
  const taken: Float32Array[] = [];
  const take = (length: number) => {
    const plane = SCRATCH.floats(length);
    taken.push(plane);
    return plane;
  };
  try {
    const grid = gridOf(image, take);
    meansOf(grid, take);
    applyAtEdges(image, grid);
  } finally {
    for (const plane of taken) SCRATCH.give(plane);
  }
}

/** F = F̄ + α(I − αF̄ − (1 − α)B̄) at each soft pixel, F̄ and B̄ read bilinearly between the grid's cell centres: per
 * row the two grid rows blended once (rowMeans), per pixel a blend of two neighbours. */
function applyAtEdges({ pixels, channels, mask, width, height }: ForegroundImage, grid: Grid): void {
  const { scale, width: gw, height: gh } = grid;
  const planes = [...grid.fore, ...grid.back];
  const rowMeans = new Float32Array(gw * 6); // per cell of the row: F̄ red, green, blue, B̄ red, green, blue
  const left = new Int32Array(width);
  const weight = new Float32Array(width);
  for (let x = 0; x < width; x++) {
    const gx = Math.min(Math.max((x + 0.5) / scale - 0.5, 0), gw - 1);
    left[x] = Math.min(Math.floor(gx), Math.max(gw - 2, 0));
    weight[x] = gw > 1 ? gx - (left[x] as number) : 0;
  }
  let meansOfRow = -1;
  for (let y = 0; y < height; y++) {
    const gy = Math.min(Math.max((y + 0.5) / scale - 0.5, 0), gh - 1);
    const y0 = Math.floor(gy);
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const m = mask[i] as number;
      if (m < SOFT_FROM || m > SOFT_TO) continue;
      if (meansOfRow !== y) {
        blendRows(planes, rowMeans, gw, y0, Math.min(y0 + 1, gh - 1), gy - y0);
        meansOfRow = y;
      }
      const a = m / 255;
      const c0 = (left[x] as number) * 6;
      const c1 = Math.min((left[x] as number) + 1, gw - 1) * 6;
      const w = weight[x] as number;
      const p = i * channels;
      for (let k = 0; k < 3; k++) {
        const f = (rowMeans[c0 + k] as number) * (1 - w) + (rowMeans[c1 + k] as number) * w;
        const b = (rowMeans[c0 + 3 + k] as number) * (1 - w) + (rowMeans[c1 + 3 + k] as number) * w;
        const estimate = f + a * ((pixels[p + k] as number) - a * f - (1 - a) * b);
        pixels[p + k] = estimate <= 0 ? 0 : estimate >= 255 ? 255 : estimate + 0.5;
      }
    }
  }
}

/** The six means of grid rows `y0` and `y1` blended by `wy`, cell by cell, into `out`. */
function blendRows(planes: Float32Array[], out: Float32Array, gw: number, y0: number, y1: number, wy: number): void {
  for (let q = 0; q < 6; q++) {
    const plane = planes[q] as Float32Array;
    for (let gx = 0; gx < gw; gx++)
      out[gx * 6 + q] = (plane[y0 * gw + gx] as number) * (1 - wy) + (plane[y1 * gw + gx] as number) * wy;
  }
}
