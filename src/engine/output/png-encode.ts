// PNG in bands deflated on the thread pool while the next is made; joined as pigz joins its streams
// (bench/RESULTS.md, "Issue #9: large photos, ORT's arena").

import zlib from 'node:zlib';
import { PNG_SIGNATURE } from '../image/png-chunks.js';
import { SCRATCH } from './scratch-buffers.js';

/** Raw interleaved rows of one band (8 bits per channel), RGB or RGBA. */
export interface Rows {
  pixels: Buffer;
  channels: 3 | 4;
}

/** Makes `count` rows starting at row `top`. Called once per band, top to bottom; the rows are read before the next
 * call only, so one buffer may serve every band. */
export type RowMaker = (top: number, count: number) => Rows;

/** Run-length on Up-filtered rows: the fastest and about the smallest of zlib's strategies
 * (bench/RESULTS.md, "Issue #9: large photos, ORT's arena"). */
const DEFLATE = { level: 1, strategy: zlib.constants.Z_RLE };
/** Raw bytes per band: both cores get bands early, and a band's fresh dictionary costs no measurable size. */
const BAND_BYTES = 2 << 20;

/** Rows per band of an image `width` pixels wide (4 bytes a pixel at most): the RowMaker's largest call. */
export const pngBandRows = (width: number): number => Math.max(1, Math.floor(BAND_BYTES / (width * 4)));
/** PNG filter type 2: each byte minus the byte above it (the row above the first counts as zeros). */
const FILTER_UP = 2;
const ADLER_BASE = 65521;
// What zlib writes for Z_FINISH after a sync flush with no input left: an empty final block with static codes.
const EMPTY_FINAL_BLOCK = Buffer.from([0x03, 0x00]);
const SYNC_FLUSH_MARKER = Buffer.from([0x00, 0x00, 0xff, 0xff]);

interface DeflatedBand {
  /** Raw deflate data ending with a sync flush: no zlib header, no final block, no checksum. */
  body: Buffer;
  /** zlib header of the band's stream (every band's is the same, same level). */
  header: Buffer;
  adler: number;
  length: number;
}

/** adler32_combine from zlib (adler32.c): the checksum of A followed by B, from theirs and B's length. */
export function adler32Combine(adler1: number, adler2: number, length2: number): number {
  const rem = length2 % ADLER_BASE;
  let sum1 = adler1 & 0xffff;
  let sum2 = (rem * sum1) % ADLER_BASE;
  sum1 += (adler2 & 0xffff) + ADLER_BASE - 1;
  sum2 += ((adler1 >>> 16) & 0xffff) + ((adler2 >>> 16) & 0xffff) + ADLER_BASE - rem;
  if (sum1 >= ADLER_BASE) sum1 -= ADLER_BASE;
  if (sum1 >= ADLER_BASE) sum1 -= ADLER_BASE;
  if (sum2 >= ADLER_BASE * 2) sum2 -= ADLER_BASE * 2;
  if (sum2 >= ADLER_BASE) sum2 -= ADLER_BASE;
  return (sum1 | (sum2 << 16)) >>> 0;
}

/** One band deflated on the thread pool, its final block and Adler-32 cut off (the checksum kept to combine). */
function deflateBand(scanlines: Buffer): Promise<DeflatedBand> {
  // One output chunk for the whole band (deflate's worst case is a little over the input): no callback every 16 KB.
  const chunkSize = scanlines.length + (scanlines.length >> 10) + 1024;
  return new Promise((resolve, reject) => {
    zlib.deflate(scanlines, { ...DEFLATE, flush: zlib.constants.Z_SYNC_FLUSH, chunkSize }, (error, stream) => {
      if (error) return reject(error);
      const end = stream.length;
      const framed =
        stream.subarray(end - 6, end - 4).equals(EMPTY_FINAL_BLOCK) &&
        stream.subarray(end - 10, end - 6).equals(SYNC_FLUSH_MARKER);
      if (!framed)
        return reject(new Error('zlib ended a band in an unexpected way; the PNG encoder cannot join its bands'));
      resolve({
        header: stream.subarray(0, 2),
        body: stream.subarray(2, end - 6),
        adler: stream.readUInt32BE(end - 4),
        length: scanlines.length,
      });
    });
  });
}

/** Bytewise a − b of four bytes at once (SWAR: no borrow crosses a byte). */
const subtractBytes = (a: number, b: number): number => ((a | 0x80808080) - (b & 0x7f7f7f7f)) ^ ((a ^ ~b) & 0x80808080);

/** A band's scanlines, Up-filtered; four bytes at a time when the rows are 4-byte aligned, being faster
 * (bench/RESULTS.md, "Issue #9: large photos, ORT's arena"). Written into a scratch buffer: the caller gives it back. */
function filterUp(pixels: Buffer, rowBytes: number, count: number, rowAbove: Buffer | undefined): Buffer {
  const scratch = SCRATCH.bytes(count * (rowBytes + 1));
  const out = Buffer.from(scratch.buffer, 0, scratch.length);
  const wordwise = rowBytes % 4 === 0 && pixels.byteOffset % 4 === 0 && (!rowAbove || rowAbove.byteOffset % 4 === 0);
  const words = rowBytes >> 2;
  const difference = new Uint32Array(wordwise ? words : 0);
  const differenceBytes = new Uint8Array(difference.buffer);
  for (let r = 0; r < count; r++) {
    const o = r * (rowBytes + 1);
    out[o] = FILTER_UP;
    const row = pixels.subarray(r * rowBytes, (r + 1) * rowBytes);
    const above = r === 0 ? rowAbove : pixels.subarray((r - 1) * rowBytes, r * rowBytes);
    if (!above) {
      row.copy(out, o + 1);
    } else if (wordwise) {
      const current32 = new Uint32Array(row.buffer, row.byteOffset, words);
      const above32 = new Uint32Array(above.buffer, above.byteOffset, words);
      for (let k = 0; k < words; k++) difference[k] = subtractBytes(current32[k] as number, above32[k] as number);
      out.set(differenceBytes, o + 1);
    } else {
      for (let x = 0; x < rowBytes; x++) out[o + 1 + x] = (row[x] as number) - (above[x] as number);
    }
  }
  return out;
}

/** The PNG file of `chunks` (each a type and its data's parts), written once into the file's buffer: each band's
 * deflated bytes are copied once, not into a chunk and then into the file. */
function pngFile(chunks: ReadonlyArray<readonly [string, Buffer[]]>): Buffer {
  const dataLength = (parts: Buffer[]) => parts.reduce((sum, part) => sum + part.length, 0);
  const total = chunks.reduce((sum, [, parts]) => sum + 12 + dataLength(parts), PNG_SIGNATURE.length);
  const file = Buffer.allocUnsafe(total);
  let at = PNG_SIGNATURE.copy(file, 0);
  for (const [type, parts] of chunks) {
    const start = at;
    at = file.writeUInt32BE(dataLength(parts), at);
    at += file.write(type, at, 'latin1');
    for (const part of parts) at += part.copy(file, at);
    at = file.writeUInt32BE(zlib.crc32(file.subarray(start + 4, at)), at); // over the type and the data
  }
  return file;
}

/** Bands deflating at once: one per thread of the pool, so other requests' sharp and fs work waits behind few. */
const BANDS_IN_FLIGHT = 4;

/** An 8-bit RGB or RGBA PNG, no ancillary chunks (untagged sRGB, like every result); a band's error rejects it. */
export async function encodePng(width: number, height: number, makeRows: RowMaker): Promise<Buffer> {
  if (!(Number.isInteger(width) && Number.isInteger(height) && width >= 1 && height >= 1)) {
    throw new RangeError(`a PNG needs a width and a height of at least 1 pixel (got ${width}×${height})`);
  }
  let channels: 3 | 4 | undefined;
  let rowAbove: Buffer | undefined; // a copy: the next band's rows may overwrite this band's
  const bands: Promise<DeflatedBand>[] = [];
  const rowsPerBand = pngBandRows(width);
  for (let top = 0; top < height; top += rowsPerBand) {
    // Waiting for the band BANDS_IN_FLIGHT back also lets the finished bands' callbacks run.
    if (bands.length >= BANDS_IN_FLIGHT) await bands[bands.length - BANDS_IN_FLIGHT];
    const count = Math.min(rowsPerBand, height - top);
    const rows = makeRows(top, count);
    channels ??= rows.channels;
    const rowBytes = width * channels;
    if (rows.channels !== channels || rows.pixels.length !== count * rowBytes) {
      throw new RangeError(
        `band at row ${top}: expected ${count} rows of ${width}×${channels} bytes, got ${rows.pixels.length} bytes of ${rows.channels} channels`,
      );
    }
    const scanlines = filterUp(rows.pixels, rowBytes, count, rowAbove);
    const band = deflateBand(scanlines);
    // Given back once zlib is done with it, whatever the outcome (the thread pool reads it until then).
    band.then(
      () => SCRATCH.give(scanlines),
      () => SCRATCH.give(scanlines),
    );
    bands.push(band);
    rowAbove ??= Buffer.allocUnsafe(rowBytes);
    rows.pixels.copy(rowAbove, 0, (count - 1) * rowBytes, count * rowBytes);
  }
  const deflated = await Promise.all(bands);
  let adler = 1; // the Adler-32 of nothing
  for (const band of deflated) adler = adler32Combine(adler, band.adler, band.length);
  const trailer = Buffer.alloc(6);
  EMPTY_FINAL_BLOCK.copy(trailer, 0);
  trailer.writeUInt32BE(adler, 2);

  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bits per channel
  header[9] = channels === 3 ? 2 : 6; // colour type: RGB or RGBA
  // compression 0 (deflate), filter method 0 (adaptive, per row), interlace 0: left as zeros
  const idat = deflated.map((band, i) => (i === 0 ? [band.header, band.body] : [band.body]));
  return pngFile([
    ['IHDR', [header]],
    ...idat.map((parts) => ['IDAT', parts] as const),
    ['IDAT', [trailer]],
    ['IEND', []],
  ]);
}
