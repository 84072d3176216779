// WebP's chunk list read with bounds checks, so the probe sees animation and truncation before libvips does.

import { corruptImage } from './input-errors.js';

export interface WebpChunk {
  fourcc: string;
  /** Offset of the chunk's FourCC in the file. */
  offset: number;
  data: Buffer;
}

/** VP8X flags byte: bit 1 says the file holds an animation. */
export const VP8X_ANIMATION_FLAG = 0x02;

const corrupt = (reason: string) => corruptImage(`the WebP is corrupt: ${reason}`);

/**
 * The chunks of the RIFF 'WEBP' container; corrupt_image when it or a chunk runs past the data (truncated).
 * A generator, so a million empty chunks are checked without a list of them.
 */
export function* webpChunks(webp: Buffer): Generator<WebpChunk> {
  if (webp.length < 12 || webp.toString('latin1', 0, 4) !== 'RIFF' || webp.toString('latin1', 8, 12) !== 'WEBP') {
    throw corrupt('the RIFF/WEBP header is missing');
  }
  const riffEnd = 8 + webp.readUInt32LE(4);
  if (riffEnd > webp.length) {
    throw corrupt(`the RIFF header announces ${riffEnd} bytes but the data has ${webp.length} (truncated file)`);
  }
  let offset = 12;
  while (offset < riffEnd) {
    if (offset + 8 > riffEnd) throw corrupt(`the data ends inside a chunk header at byte ${offset}`);
    const fourcc = webp.toString('latin1', offset, offset + 4);
    const size = webp.readUInt32LE(offset + 4);
    const end = offset + 8 + size;
    if (end > riffEnd)
      throw corrupt(`the ${JSON.stringify(fourcc)} chunk at byte ${offset} runs past the end of the data`);
    yield { fourcc, offset, data: webp.subarray(offset + 8, end) };
    // Chunks are padded to an even size; a missing pad byte after the last chunk is harmless.
    offset = end + (size & 1);
  }
}
