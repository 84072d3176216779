// HEVC-coded HEIC, which sharp's prebuilt libvips cannot decode (its libheif has AV1 only): libheif compiled to
// WebAssembly (heic-decode over libheif-js). Loaded with import() by its pixel job
// (runtime/pixel-jobs.ts) only when a HEIC is met; engine/decode-input.ts sends it there.

import decodeHeic from 'heic-decode';

/** The RGBA pixels of the top-level image of `width`×`height` (the primary, whose header was checked). */
export async function decodeHeicPixels(
  input: Buffer,
  size: { width: number; height: number },
): Promise<Buffer | undefined> {
  const images = await decodeHeic.all({ buffer: input });
  try {
    // Only the image whose size the limits passed is decoded: another (a bigger one first) never is.
    const image = images.find((candidate) => candidate.width === size.width && candidate.height === size.height);
    if (!image) return undefined;
    const { data } = await image.decode();
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  } finally {
    images.dispose();
  }
}
