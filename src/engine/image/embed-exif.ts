// Puts the kept EXIF into an encoded result without re-encoding it (--keep-metadata).

import type { OutputFormat } from '../../api/options.js';
import { pngChunk } from './png-chunks.js';
import { PSD_RESOURCE, psdResource } from './psd-resource.js';

const EXIF_PREFIX = Buffer.from('Exif\0\0', 'latin1');

function intoPng(png: Buffer, tiff: Buffer): Buffer {
  // eXIf must come before the first IDAT; right after IHDR (signature 8 + IHDR 12 + 13 bytes) always is.
  const afterIhdr = 8 + 12 + png.readUInt32BE(8);
  return Buffer.concat([png.subarray(0, afterIhdr), pngChunk('eXIf', tiff), png.subarray(afterIhdr)]);
}

function intoJpeg(jpeg: Buffer, tiff: Buffer): Buffer {
  const payload = Buffer.concat([EXIF_PREFIX, tiff]);
  if (payload.length + 2 > 0xffff) return jpeg; // one APP1 segment holds at most 64 KiB; what we keep is far smaller
  const head = Buffer.from([0xff, 0xe1, 0, 0]);
  head.writeUInt16BE(payload.length + 2, 2);
  // After SOI, and after a JFIF APP0 if there is one (JFIF wants to be first).
  let at = 2;
  if (jpeg[2] === 0xff && jpeg[3] === 0xe0) at = 4 + jpeg.readUInt16BE(4);
  return Buffer.concat([jpeg.subarray(0, at), head, payload, jpeg.subarray(at)]);
}

const VP8X_EXIF = 0x08;
const VP8X_ALPHA = 0x10;

function riffChunk(fourcc: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(fourcc, 0, 'latin1');
  head.writeUInt32LE(data.length, 4);
  return Buffer.concat([head, data, data.length & 1 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}

function intoWebp(webp: Buffer, tiff: Buffer, width: number, height: number): Buffer {
  const first = webp.toString('latin1', 12, 16);
  let body = webp.subarray(12);
  if (first === 'VP8X') {
    body = Buffer.from(body);
    body[8] = (body[8] as number) | VP8X_EXIF;
  } else {
    // A simple file (one VP8 or VP8L chunk) becomes an extended one: VP8X first, announcing the EXIF chunk.
    const vp8x = Buffer.alloc(10);
    const lossless = first === 'VP8L';
    const alpha = lossless && ((webp[20 + 4] as number) & 0x10) !== 0; // VP8L header: alpha_is_used bit
    vp8x[0] = VP8X_EXIF | (alpha ? VP8X_ALPHA : 0);
    vp8x.writeUIntLE(width - 1, 4, 3);
    vp8x.writeUIntLE(height - 1, 7, 3);
    body = Buffer.concat([riffChunk('VP8X', vp8x), body]);
  }
  const out = Buffer.concat([Buffer.from('RIFF\0\0\0\0WEBP', 'latin1'), body, riffChunk('EXIF', tiff)]);
  out.writeUInt32LE(out.length - 8, 4);
  return out;
}

/** PSD: an image resource 1058 (EXIF data 1) appended to the image resources section (engine/output/psd-encode.ts). */
function intoPsd(psd: Buffer, tiff: Buffer): Buffer {
  const resourcesAt = 26 + 4 + psd.readUInt32BE(26); // after the header and the colour mode data
  const resourcesLength = psd.readUInt32BE(resourcesAt);
  const block = psdResource(PSD_RESOURCE.exif, tiff);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(resourcesLength + block.length);
  const end = resourcesAt + 4 + resourcesLength;
  return Buffer.concat([
    psd.subarray(0, resourcesAt),
    length,
    psd.subarray(resourcesAt + 4, end),
    block,
    psd.subarray(end),
  ]);
}

/** The encoded result with `tiff` (a TIFF-structured EXIF block) embedded. */
export function embedExif(
  encoded: Buffer,
  format: OutputFormat,
  tiff: Buffer,
  size: { width: number; height: number },
): Buffer {
  switch (format) {
    case 'png':
      return intoPng(encoded, tiff);
    case 'jpg':
      return intoJpeg(encoded, tiff);
    case 'webp':
      return intoWebp(encoded, tiff, size.width, size.height);
    case 'psd':
      return intoPsd(encoded, tiff);
    case 'tiff':
      // A TIFF's EXIF is an IFD of its own inside the file, which this does not rewrite: the layered TIFF keeps none.
      return encoded;
  }
}
