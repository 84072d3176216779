// PNG chunks read with CRC and bounds checks (libvips reports no APNG and skips a CRC) and written.

import zlib from 'node:zlib';
import { corruptImage } from './input-errors.js';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const corrupt = (reason: string) => corruptImage(`the PNG is corrupt: ${reason}`);

export interface PngChunk {
  type: string;
  /** Offset of the chunk's length field in the file. */
  offset: number;
  /** Length of the chunk's data. */
  length: number;
  /** The chunk's data (a view, made when asked for: hostile files hold millions of empty chunks). */
  readonly data: Buffer;
}

class ChunkView implements PngChunk {
  constructor(
    private readonly png: Buffer,
    readonly type: string,
    readonly offset: number,
    readonly length: number,
  ) {}

  get data(): Buffer {
    return this.png.subarray(this.offset + 8, this.offset + 8 + this.length);
  }
}

const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

// The table is faster for short chunks (no native call); zlib.crc32 (Node >= 20.15) for pixel data.
const NATIVE_CRC_FROM = 256;

/** CRC-32 of bytes start..end of data. */
function crc32(data: Buffer, start = 0, end = data.length): number {
  if (end - start >= NATIVE_CRC_FROM && typeof zlib.crc32 === 'function') return zlib.crc32(data.subarray(start, end));
  let crc = 0xffffffff;
  for (let i = start; i < end; i++) crc = (CRC_TABLE[(crc ^ (data[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/**
 * The chunks up to IEND (a missing IEND is left to the decoder); corrupt_image when one is truncated or its CRC
 * is wrong. A generator, so a million empty chunks are checked without a list of them.
 */
export function* pngChunks(png: Buffer): Generator<PngChunk> {
  if (png.length < PNG_SIGNATURE.length || !png.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) {
    throw corrupt('the PNG signature is missing');
  }
  let offset = PNG_SIGNATURE.length;
  while (offset < png.length) {
    if (offset + 12 > png.length)
      throw corrupt(`the data ends inside a chunk header at byte ${offset} (truncated file)`);
    const length = png.readUInt32BE(offset);
    const type = String.fromCharCode(png[offset + 4]!, png[offset + 5]!, png[offset + 6]!, png[offset + 7]!);
    const end = offset + 12 + length;
    if (length > 0x7fffffff || end > png.length) {
      throw corrupt(
        `the ${JSON.stringify(type)} chunk at byte ${offset} runs past the end of the data (truncated file)`,
      );
    }
    if (crc32(png, offset + 4, end - 4) !== png.readUInt32BE(end - 4)) {
      throw corrupt(`the ${JSON.stringify(type)} chunk at byte ${offset} has a wrong CRC`);
    }
    yield new ChunkView(png, type, offset, length);
    if (type === 'IEND') return;
    offset = end;
  }
}

/** Frames a chunk: length, type, data, CRC over type and data. */
export function pngChunk(type: string, data: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}
