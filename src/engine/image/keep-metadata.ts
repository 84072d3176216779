// --keep-metadata: the result carries the photo's authorship and dates (a camera RAW's too) (exif.ts says which tags), and its GPS
// position only with --keep-gps. Without the flag a result carries no metadata at all (the default: a cutout
// shared online should not give away where it was taken). Colour needs no step here: the pipeline converts
// an ICC-tagged photo (Display P3, Adobe RGB…) to sRGB when decoding, and results are untagged sRGB.

import sharp from 'sharp';
import type { OutputFormat } from '../../api/options.js';
import { embedExif } from './embed-exif.js';
import { buildTiff, pickExif } from './exif.js';
import { rawKindOf } from '../raw/raw-kind.js';
import { rawLayout } from '../raw/raw-layout.js';

export interface MetadataPolicy {
  /** Keep Artist, Copyright and the dates. */
  keep: boolean;
  /** Keep the GPS position too (only with keep). */
  gps: boolean;
}

/** The result with the kept metadata of `input` embedded; unchanged when nothing is to be kept. */
export async function withKeptMetadata(
  input: Buffer,
  result: { data: Buffer; format: OutputFormat; width: number; height: number },
  policy: MetadataPolicy,
): Promise<Buffer> {
  if (!policy.keep) return result.data;
  const kept = pickExif(await exifOf(input), { gps: policy.gps });
  return kept ? embedExif(result.data, result.format, buildTiff(kept), result) : result.data;
}

/** The photo's EXIF block: a camera RAW's TIFF structure (or CR3's CMT1) where its tags lie, else what sharp reads. */
async function exifOf(input: Buffer): Promise<Buffer | undefined> {
  const kind = rawKindOf(input);
  if (kind) return rawLayout(input, kind).exif;
  return (await sharp(input).metadata()).exif;
}
