// Which camera RAW a file is, from its content, never its name: Fujifilm's and Canon CR3's own signatures, and
// for the TIFF-structured kinds their header's marks (CR2, ORF, RW2), a DNGVersion tag, or a raw image (a colour
// filter array, LinearRaw, or a maker's compression) named by the camera's Make. A plain TIFF is none of them.

import type { RawFormat } from '../../api/media-types.js';
import { TiffIfds } from './tiff-ifds.js';

const PHOTOMETRIC = 262;
const COMPRESSION = 259;
const MAKE = 271;
const DNG_VERSION = 0xc612;
/** Photometric interpretations of sensor data: colour filter array (Bayer, X-Trans), LinearRaw. */
const RAW_PHOTOMETRIC = new Set([32803, 34892]);
/** Compressions only camera makers use: Sony ARW (32767), Nikon NEF (34713), Pentax PEF (65535), Panasonic (34316). */
const MAKER_COMPRESSION = new Set([32767, 34713, 65535, 34316]);

/** By the camera maker's Make tag, the kind of a TIFF RAW that carries no mark of its own. */
const KIND_BY_MAKE: ReadonlyArray<[RegExp, RawFormat]> = [
  [/^nikon/i, 'nef'],
  [/^sony/i, 'arw'],
  [/^(pentax|ricoh)/i, 'pef'],
  [/^canon/i, 'cr2'],
  [/^(olympus|om digital)/i, 'orf'],
  [/^(panasonic|leica)/i, 'rw2'],
  [/^fujifilm/i, 'raf'],
];

/** The RAW kind of `data`, or undefined when it is no camera RAW rmbg knows. */
export function rawKindOf(data: Buffer): RawFormat | undefined {
  if (data.toString('latin1', 0, 16) === 'FUJIFILMCCD-RAW ') return 'raf';
  if (data.toString('latin1', 4, 12) === 'ftypcrx ') return 'cr3';
  const order = data.toString('latin1', 0, 2);
  if (order !== 'II' && order !== 'MM') return undefined;
  let tiff: TiffIfds;
  try {
    tiff = new TiffIfds(data);
  } catch {
    return undefined;
  }
  const magic = tiff.u16(2);
  if (magic === 0x4f52 || magic === 0x5352) return 'orf';
  if (magic === 0x55) return 'rw2';
  if (data.toString('latin1', 8, 10) === 'CR' && data[10] === 2) return 'cr2';
  const [ifd0] = tiff.all;
  if (!ifd0) return undefined;
  if (ifd0.has(DNG_VERSION)) return 'dng';
  const holdsRaw = tiff.all.some(
    (ifd) =>
      RAW_PHOTOMETRIC.has(tiff.number(ifd, PHOTOMETRIC) ?? 0) ||
      MAKER_COMPRESSION.has(tiff.number(ifd, COMPRESSION) ?? 0),
  );
  if (!holdsRaw) return undefined;
  const make = tiff.text(ifd0, MAKE) ?? '';
  return KIND_BY_MAKE.find(([pattern]) => pattern.test(make))?.[1];
}
