// Where a camera RAW keeps what rmbg reads without developing it: the camera's JPEG previews (TIFF IFDs by
// JPEGInterchangeFormat or a JPEG strip, Panasonic's JpgFromRaw, Fujifilm's header, CR3's first track), the sensor's
// size (to tell a full-size preview from a small one), the Orientation tag and the TIFF block holding the EXIF.

import type { RawFormat } from '../../api/media-types.js';
import { type Ifd, TiffIfds } from './tiff-ifds.js';

/** A JPEG inside the RAW: its bytes and the size its frame header declares. */
export interface EmbeddedJpeg {
  data: Buffer;
  width: number;
  height: number;
}

export interface RawLayout {
  /** The largest baseline or progressive JPEG found; undefined when the camera stored none rmbg can find. */
  preview: EmbeddedJpeg | undefined;
  /** The sensor's image size as stored (before orientation), when the file says it. */
  sensor: { width: number; height: number } | undefined;
  /** TIFF Orientation (1..8) of the RAW; undefined when it has none (a RAF's is in its JPEG's own EXIF). */
  orientation: number | undefined;
  /** A TIFF block whose IFD0 (and its Exif IFD) holds the photo's EXIF: the RAW itself, or CR3's CMT1. */
  exif: Buffer | undefined;
}

const TAG = {
  width: 256,
  height: 257,
  compression: 259,
  photometric: 262,
  stripOffsets: 273,
  orientation: 274,
  stripByteCounts: 279,
  jpegOffset: 513,
  jpegLength: 514,
  panasonicJpgFromRaw: 0x2e,
  defaultCropSize: 0xc620,
  pixelXDimension: 0xa002,
  pixelYDimension: 0xa003,
} as const;
const RAW_PHOTOMETRIC = new Set([32803, 34892]);

/** The frame size of a JPEG that libjpeg decodes (SOF0-2: baseline, extended, progressive); undefined for a lossless
 * one (SOF3: CR2's and NEF's raw data are such "JPEGs") or anything that is no JPEG. */
export function jpegFrameSize(jpeg: Buffer): { width: number; height: number } | undefined {
  if (jpeg.length < 4 || jpeg[0] !== 0xff || jpeg[1] !== 0xd8) return undefined;
  for (let at = 2; at + 9 <= jpeg.length; ) {
    if (jpeg[at] !== 0xff) return undefined;
    const marker = jpeg[at + 1] as number;
    if (marker === 0xff) {
      at++;
      continue;
    }
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (marker > 0xc2) return undefined;
      return { height: jpeg.readUInt16BE(at + 5), width: jpeg.readUInt16BE(at + 7) };
    }
    if (marker === 0xd9 || marker === 0xda) return undefined;
    at += 2 + jpeg.readUInt16BE(at + 2);
  }
  return undefined;
}

function embedded(data: Buffer | undefined): EmbeddedJpeg | undefined {
  const size = data && jpegFrameSize(data);
  return size && data ? { data, ...size } : undefined;
}

function largest(jpegs: Array<EmbeddedJpeg | undefined>): EmbeddedJpeg | undefined {
  return jpegs.reduce<EmbeddedJpeg | undefined>(
    (best, jpeg) => (jpeg && (!best || jpeg.width * jpeg.height > best.width * best.height) ? jpeg : best),
    undefined,
  );
}

/** The JPEGs of one IFD: by JPEGInterchangeFormat, as a single JPEG-compressed strip, as Panasonic's JpgFromRaw. */
function jpegsOf(tiff: TiffIfds, ifd: Ifd): Array<EmbeddedJpeg | undefined> {
  const found: Array<EmbeddedJpeg | undefined> = [];
  const offset = tiff.number(ifd, TAG.jpegOffset);
  const length = tiff.number(ifd, TAG.jpegLength);
  if (offset !== undefined && length !== undefined) found.push(embedded(tiff.bytes(offset, length)));
  const compression = tiff.number(ifd, TAG.compression);
  const strips = tiff.numbers(ifd, TAG.stripOffsets);
  const counts = tiff.numbers(ifd, TAG.stripByteCounts);
  if ((compression === 6 || compression === 7) && strips.length === 1 && counts.length === 1) {
    found.push(embedded(tiff.bytes(strips[0] as number, counts[0] as number)));
  }
  const panasonic = ifd.get(TAG.panasonicJpgFromRaw);
  if (panasonic && panasonic.type === 7) found.push(embedded(tiff.bytes(panasonic.at, panasonic.count)));
  return found;
}

/** The largest raw image's size (DNG's DefaultCropSize where given), else the Exif pixel dimensions. */
function sensorOf(tiff: TiffIfds): RawLayout['sensor'] {
  const sizes = tiff.all
    .filter((ifd) => RAW_PHOTOMETRIC.has(tiff.number(ifd, TAG.photometric) ?? 0))
    .map((ifd) => {
      const [cropWidth, cropHeight] = tiff.numbers(ifd, TAG.defaultCropSize);
      return cropWidth && cropHeight
        ? { width: cropWidth, height: cropHeight }
        : { width: tiff.number(ifd, TAG.width) ?? 0, height: tiff.number(ifd, TAG.height) ?? 0 };
    })
    .filter((size) => size.width > 0 && size.height > 0);
  const exif = tiff.all.find((ifd) => ifd.has(TAG.pixelXDimension) && ifd.has(TAG.pixelYDimension));
  if (exif)
    sizes.push({
      width: tiff.number(exif, TAG.pixelXDimension) ?? 0,
      height: tiff.number(exif, TAG.pixelYDimension) ?? 0,
    });
  return sizes.reduce<RawLayout['sensor']>(
    (best, size) => (!best || size.width * size.height > best.width * best.height ? size : best),
    undefined,
  );
}

function validOrientation(value: number | undefined): number | undefined {
  return value !== undefined && value >= 1 && value <= 8 ? value : undefined;
}

function tiffLayout(data: Buffer): RawLayout {
  const tiff = new TiffIfds(data);
  const ifd0 = tiff.all[0];
  return {
    preview: largest(tiff.all.flatMap((ifd) => jpegsOf(tiff, ifd))),
    sensor: sensorOf(tiff),
    orientation: ifd0 && validOrientation(tiff.number(ifd0, TAG.orientation)),
    exif: data,
  };
}

/** Fujifilm RAF: a header giving the JPEG's offset and length (big-endian, at 84 and 88) and the CFA header's (at
 * 92), whose record 0x100 holds the raw image's full height and width. The JPEG carries the orientation. */
function rafLayout(data: Buffer): RawLayout {
  const u32 = (at: number) => (at + 4 <= data.length ? data.readUInt32BE(at) : 0);
  const slice = (offset: number, length: number) =>
    offset > 0 && length > 0 && offset + length <= data.length ? data.subarray(offset, offset + length) : undefined;
  const preview = embedded(slice(u32(84), u32(88)));
  let sensor: RawLayout['sensor'];
  const cfa = slice(u32(92), u32(96));
  if (cfa && cfa.length >= 4) {
    const records = cfa.readUInt32BE(0);
    for (let i = 0, at = 4; i < Math.min(records, 256) && at + 4 <= cfa.length; i++) {
      const tag = cfa.readUInt16BE(at);
      const size = cfa.readUInt16BE(at + 2);
      if (tag === 0x100 && size >= 4 && at + 8 <= cfa.length) {
        sensor = { height: cfa.readUInt16BE(at + 4), width: cfa.readUInt16BE(at + 6) };
      }
      at += 4 + size;
    }
  }
  return { preview, sensor, orientation: undefined, exif: undefined };
}

interface Box {
  type: string;
  /** Where the box's content starts and ends. */
  start: number;
  end: number;
}

/** The ISO-BMFF boxes between `from` and `to` (64-bit sizes too); a box that runs past them ends the list. */
function boxes(data: Buffer, from: number, to: number): Box[] {
  const found: Box[] = [];
  for (let at = from; at + 8 <= to; ) {
    let size = data.readUInt32BE(at);
    let header = 8;
    if (size === 1 && at + 16 <= to) {
      size = Number(data.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) size = to - at;
    if (size < header || at + size > to) break;
    const type = data.toString('latin1', at + 4, at + 8);
    found.push({ type, start: at + header + (type === 'uuid' ? 16 : 0), end: at + size });
    at += size;
  }
  return found;
}

const CANON_UUID = '85c0b687820f11e08111f4ce462b6a48';
const PREVIEW_UUID = 'eaf42b5e1c984b88b9fbb7dc406e4d16';

/** Canon CR3 (ISO-BMFF): the full-size JPEG is the first track's one sample (its stsz size, co64 or stco offset),
 * the 1620-pixel PRVW in a uuid box beside it; CMT1 is a TIFF block with IFD0's tags (Orientation, Artist …). */
function cr3Layout(data: Buffer): RawLayout {
  const top = boxes(data, 0, data.length);
  const child = (parent: Box | undefined, type: string) =>
    parent && boxes(data, parent.start, parent.end).find((box) => box.type === type);
  const uuidOf = (box: Box) => data.toString('hex', box.start - 16, box.start);
  const moov = top.find((box) => box.type === 'moov');
  const jpegs: Array<EmbeddedJpeg | undefined> = [];
  const stbl = child(child(child(child(moov, 'trak'), 'mdia'), 'minf'), 'stbl');
  const stsz = child(stbl, 'stsz');
  const chunks = child(stbl, 'co64') ?? child(stbl, 'stco');
  if (stsz && chunks && stsz.start + 12 <= stsz.end && chunks.start + 16 <= chunks.end) {
    // stsz: version and flags, one size for every sample (or 0, then each sample's size follows the count).
    const common = data.readUInt32BE(stsz.start + 4);
    const size = common || (stsz.start + 16 <= stsz.end ? data.readUInt32BE(stsz.start + 12) : 0);
    const offset =
      chunks.type === 'co64' ? Number(data.readBigUInt64BE(chunks.start + 8)) : data.readUInt32BE(chunks.start + 8);
    if (offset + size <= data.length) jpegs.push(embedded(data.subarray(offset, offset + size)));
  }
  const previewBox = top.find((box) => box.type === 'uuid' && uuidOf(box) === PREVIEW_UUID);
  const prvw = previewBox && boxes(data, previewBox.start + 8, previewBox.end).find((box) => box.type === 'PRVW');
  if (prvw && prvw.start + 16 <= prvw.end) {
    const length = data.readUInt32BE(prvw.start + 8 + 4);
    jpegs.push(embedded(data.subarray(prvw.start + 16, Math.min(prvw.end, prvw.start + 16 + length))));
  }
  const canon =
    moov && boxes(data, moov.start, moov.end).find((box) => box.type === 'uuid' && uuidOf(box) === CANON_UUID);
  const cmt1 = child(canon, 'CMT1');
  let orientation: number | undefined;
  let exif: Buffer | undefined;
  if (cmt1) {
    exif = data.subarray(cmt1.start, cmt1.end);
    try {
      const tiff = new TiffIfds(exif);
      orientation = tiff.all[0] && validOrientation(tiff.number(tiff.all[0], TAG.orientation));
    } catch {
      exif = undefined;
    }
  }
  // Canon's first track is the full-size JPEG by design: the sensor's size is that JPEG's.
  const preview = largest(jpegs);
  return { preview, sensor: preview && { width: preview.width, height: preview.height }, orientation, exif };
}

/** What `data`, a RAW of `kind`, holds; anything unreadable is left undefined (the RAW is then developed). */
export function rawLayout(data: Buffer, kind: RawFormat): RawLayout {
  try {
    if (kind === 'raf') return rafLayout(data);
    if (kind === 'cr3') return cr3Layout(data);
    return tiffLayout(data);
  } catch {
    return { preview: undefined, sensor: undefined, orientation: undefined, exif: undefined };
  }
}
