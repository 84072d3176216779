// A layered PSD, written from Adobe's "Photoshop File Formats Specification": the photo as a layer whose layer mask
// is the cutout's alpha, over an optional layer of the background colour, the flattened image other programs show,
// and the photo's ICC profile. Written here rather than by ag-psd, which cannot write the ICC resource.

import type { Rgba } from '../../api/color.js';
import { RmbgError } from '../../api/errors.js';
import { PSD_RESOURCE, psdResource } from '../image/psd-resource.js';

export interface PsdInput {
  width: number;
  height: number;
  /** The photo's pixels, 8 bits per channel, RGB or RGBA, interleaved, in its own colour space. */
  pixels: Buffer;
  channels: 3 | 4;
  /** The cutout's alpha, one byte per pixel: the photo layer's mask. */
  mask: Buffer;
  /** The colour of a layer under the photo; none: the photo alone, over transparency. */
  background: Rgba | undefined;
  /** The photo's ICC profile, kept with its pixels. */
  icc: Buffer | undefined;
}

/** PSD's largest side; a larger image needs the PSB format. */
export const PSD_MAX_SIDE = 30_000;

/** Channel ids of a layer record: the colours, the layer's transparency and its user mask. */
const CHANNEL = { red: 0, green: 1, blue: 2, transparency: -1, userMask: -2 } as const;
/** Compression of channel data: PackBits, row by row, as Photoshop writes it. */
const RLE = 1;

/** One channel's data compressed: the compression, each row's byte count, the rows. */
interface PackedChannel {
  id: number;
  data: Buffer;
}

/** PackBits (Apple TN1023) of one row into `out` from `at`; returns where it ended. */
function packRow(row: Buffer, out: Buffer, at: number): number {
  let o = at;
  let i = 0;
  const n = row.length;
  while (i < n) {
    let run = 1;
    while (i + run < n && run < 128 && row[i + run] === row[i]) run++;
    if (run > 1) {
      out[o++] = 257 - run; // -(run - 1) as a byte
      out[o++] = row[i] as number;
      i += run;
      continue;
    }
    const start = i++;
    while (i < n && i - start < 128 && !(i + 1 < n && row[i] === row[i + 1])) i++;
    out[o++] = i - start - 1;
    row.copy(out, o, start, i);
    o += i - start;
  }
  return o;
}

/** A plane (width×height bytes) as RLE rows: their byte counts (16 bits each), then the rows. */
function packPlane(plane: Buffer, width: number, height: number): { counts: Buffer; rows: Buffer } {
  const counts = Buffer.alloc(height * 2);
  // PackBits' worst case: one header byte per 128 literal bytes.
  const rows = Buffer.allocUnsafe(height * (width + Math.ceil(width / 128)));
  let at = 0;
  for (let y = 0; y < height; y++) {
    const end = packRow(plane.subarray(y * width, (y + 1) * width), rows, at);
    counts.writeUInt16BE(end - at, y * 2);
    at = end;
  }
  return { counts, rows: rows.subarray(0, at) };
}

/** One channel of interleaved pixels as a plane. */
function planeOf(pixels: Buffer, channels: number, channel: number, pixelCount: number): Buffer {
  const plane = Buffer.allocUnsafe(pixelCount);
  for (let i = 0, j = channel; i < pixelCount; i++, j += channels) plane[i] = pixels[j] as number;
  return plane;
}

function int16(value: number): Buffer {
  const buffer = Buffer.alloc(2);
  buffer.writeInt16BE(value);
  return buffer;
}

function u32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value);
  return buffer;
}

/** A Pascal string padded so that its length byte and text fill a multiple of `multiple` bytes. */
function pascal(text: string, multiple: number): Buffer {
  const bytes = Buffer.from(text, 'latin1');
  const length = 1 + bytes.length;
  return Buffer.concat([Buffer.from([bytes.length]), bytes, Buffer.alloc((multiple - (length % multiple)) % multiple)]);
}

interface LayerSpec {
  name: string;
  channels: { id: number; plane: Buffer }[];
  /** The user mask covers the whole canvas. */
  hasMask: boolean;
}

/** A layer's record (the rectangle is the canvas) and its channels' data, compressed. */
function layer(spec: LayerSpec, width: number, height: number): { record: Buffer; data: Buffer } {
  const packed: PackedChannel[] = spec.channels.map(({ id, plane }) => {
    const { counts, rows } = packPlane(plane, width, height);
    return { id, data: Buffer.concat([int16(RLE), counts, rows]) };
  });
  const rect = Buffer.concat([u32(0), u32(0), u32(height), u32(width)]); // top, left, bottom, right
  const channelInfo = packed.map(({ id, data }) => Buffer.concat([int16(id), u32(data.length)]));
  // Layer mask data: its rectangle, default colour 0 (hidden outside it), flags 0 (enabled), two bytes of padding.
  const maskData = spec.hasMask ? Buffer.concat([u32(20), rect, Buffer.from([0, 0, 0, 0])]) : u32(0);
  // Blending ranges: the composite grey's source and destination ranges, each "all of 0..255".
  const blending = Buffer.concat([u32(8), Buffer.from([0, 0, 255, 255, 0, 0, 255, 255])]);
  const extra = Buffer.concat([maskData, blending, pascal(spec.name, 4)]);
  const record = Buffer.concat([
    rect,
    int16(packed.length),
    ...channelInfo,
    Buffer.from('8BIMnorm', 'latin1'), // blend mode signature and key: normal
    Buffer.from([255, 0, 0, 0]), // opacity, clipping (base), flags (visible), filler
    u32(extra.length),
    extra,
  ]);
  return { record, data: Buffer.concat(packed.map((channel) => channel.data)) };
}

/** The flattened image (what a program that reads no layers shows): the photo under its mask, over the background.
 * With transparency it keeps an alpha channel, its colours matted with white as Photoshop writes them. */
function composite(input: PsdInput): Buffer[] {
  const { pixels, channels, mask, background, width, height } = input;
  const pixelCount = width * height;
  const bgAlpha = background ? background.alpha : 0;
  const opaque = bgAlpha === 1;
  const planes = Array.from({ length: opaque ? 3 : 4 }, () => Buffer.allocUnsafe(pixelCount));
  const bg = [background?.r ?? 0, background?.g ?? 0, background?.b ?? 0];
  for (let i = 0; i < pixelCount; i++) {
    const own = channels === 4 ? (pixels[i * 4 + 3] as number) / 255 : 1;
    const a = ((mask[i] as number) / 255) * own;
    const under = bgAlpha * (1 - a);
    const outA = a + under;
    for (let c = 0; c < 3; c++) {
      const over = outA === 0 ? 0 : ((pixels[i * channels + c] as number) * a + (bg[c] as number) * under) / outA;
      (planes[c] as Buffer)[i] = opaque ? over + 0.5 : over * outA + 255 * (1 - outA) + 0.5;
    }
    if (!opaque) (planes[3] as Buffer)[i] = outA * 255 + 0.5;
  }
  return planes;
}

/** The PSD file. */
export function encodePsd(input: PsdInput): Buffer {
  const { width, height, pixels, channels, mask, background, icc } = input;
  if (width > PSD_MAX_SIDE || height > PSD_MAX_SIDE)
    throw new RmbgError(
      'invalid_option',
      `a PSD is at most ${PSD_MAX_SIDE} pixels a side; this result is ${width}×${height}: use --format tiff, or a smaller --size`,
    );
  const pixelCount = width * height;
  const opaquePlane = Buffer.alloc(pixelCount, 255);
  const layers: LayerSpec[] = [];
  if (background) {
    const flat = (value: number) => Buffer.alloc(pixelCount, value);
    layers.push({
      name: 'Background colour',
      hasMask: false,
      channels: [
        { id: CHANNEL.transparency, plane: flat(Math.round(background.alpha * 255)) },
        { id: CHANNEL.red, plane: flat(background.r) },
        { id: CHANNEL.green, plane: flat(background.g) },
        { id: CHANNEL.blue, plane: flat(background.b) },
      ],
    });
  }
  layers.push({
    name: 'Photo',
    hasMask: true,
    channels: [
      { id: CHANNEL.transparency, plane: channels === 4 ? planeOf(pixels, 4, 3, pixelCount) : opaquePlane },
      { id: CHANNEL.red, plane: planeOf(pixels, channels, 0, pixelCount) },
      { id: CHANNEL.green, plane: planeOf(pixels, channels, 1, pixelCount) },
      { id: CHANNEL.blue, plane: planeOf(pixels, channels, 2, pixelCount) },
      { id: CHANNEL.userMask, plane: mask },
    ],
  });
  const written = layers.map((spec) => layer(spec, width, height)); // bottom first, as PSD stores them
  const flattened = composite(input);
  // A negative count says the composite's first alpha channel is the merged transparency.
  const count = flattened.length === 4 ? -written.length : written.length;
  let layerInfo = Buffer.concat([int16(count), ...written.map((l) => l.record), ...written.map((l) => l.data)]);
  layerInfo = Buffer.concat([layerInfo, Buffer.alloc(layerInfo.length % 2)]);
  const layerSection = Buffer.concat([u32(layerInfo.length), layerInfo, u32(0)]); // no global layer mask info
  const header = Buffer.concat([
    Buffer.from('8BPS', 'latin1'),
    int16(1), // version
    Buffer.alloc(6),
    int16(flattened.length),
    u32(height),
    u32(width),
    int16(8), // bits per channel
    int16(3), // colour mode: RGB
  ]);
  const resources = icc ? psdResource(PSD_RESOURCE.iccProfile, icc) : Buffer.alloc(0);
  const packed = flattened.map((plane) => packPlane(plane, width, height));
  return Buffer.concat([
    header,
    u32(0), // colour mode data: none for RGB
    u32(resources.length),
    resources,
    u32(layerSection.length),
    layerSection,
    int16(RLE),
    ...packed.map((plane) => plane.counts),
    ...packed.map((plane) => plane.rows),
  ]);
}
