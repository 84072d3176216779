// An image's format from its first bytes, never its name; refused formats are named so the error says what it found.

import { supportedFormatOf, type SupportedFormat } from '../../api/media-types.js';

export type { SupportedFormat };

export type ImageSignature = { supported: true; format: SupportedFormat } | { supported: false; name: string };

function startsWith(data: Buffer, bytes: readonly number[], at = 0): boolean {
  return data.length >= at + bytes.length && bytes.every((byte, i) => data[at + i] === byte);
}

function ascii(data: Buffer, start: number, end: number): string {
  return data.toString('latin1', start, Math.min(end, data.length));
}

/** ISO base media files (HEIF, AVIF, MP4 …) name themselves by the major brand of their `ftyp` box. */
function isoMediaName(brand: string): string {
  if (brand === 'avif' || brand === 'avis') return 'AVIF';
  if (['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis', 'mif1', 'msf1'].includes(brand)) return 'HEIF/HEIC';
  if (brand === 'crx ') return 'Canon CR3 raw';
  if (brand.startsWith('jp2') || brand === 'jpx ') return 'JPEG 2000';
  return `ISO media (brand ${JSON.stringify(brand.trimEnd())}, e.g. MP4/MOV video)`;
}

/** Text formats: XML and SVG may start with a byte-order mark, whitespace, a declaration or comments. */
function markupName(data: Buffer): string | undefined {
  const head = data
    .toString('utf8', 0, Math.min(data.length, 4096))
    .replace(/^\uFEFF/, '')
    .trimStart();
  if (!head.startsWith('<')) return undefined;
  if (/<svg[\s>]/i.test(head)) return 'SVG';
  if (/^<!doctype html|^<html/i.test(head)) return 'HTML';
  return 'XML';
}

export function detectImageSignature(data: Buffer): ImageSignature {
  const supported = supportedFormatOf(data);
  if (supported) return { supported: true, format: supported };

  const name = ((): string | undefined => {
    const magic4 = ascii(data, 0, 4);
    if (magic4 === 'GIF8') return 'GIF';
    if (startsWith(data, [0x49, 0x49, 0x2a, 0x00]) || startsWith(data, [0x4d, 0x4d, 0x00, 0x2a]))
      return 'TIFF (or a camera raw file built on TIFF)';
    if (startsWith(data, [0x49, 0x49, 0x2b, 0x00]) || startsWith(data, [0x4d, 0x4d, 0x00, 0x2b])) return 'BigTIFF';
    if (ascii(data, 4, 8) === 'ftyp') return isoMediaName(ascii(data, 8, 12));
    if (startsWith(data, [0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20])) return 'JPEG 2000';
    if (startsWith(data, [0xff, 0x0a]) || startsWith(data, [0x00, 0x00, 0x00, 0x0c, 0x4a, 0x58, 0x4c, 0x20]))
      return 'JPEG XL';
    if (magic4 === 'RIFF') return `RIFF ${JSON.stringify(ascii(data, 8, 12))} (not WebP)`;
    if (ascii(data, 0, 2) === 'BM' && data.length >= 14) return 'BMP';
    if (startsWith(data, [0x00, 0x00, 0x01, 0x00])) return 'ICO';
    if (magic4 === '8BPS') return 'Photoshop PSD';
    if (magic4 === '%PDF') return 'PDF';
    if (ascii(data, 0, 8) === 'gimp xcf') return 'GIMP XCF';
    if (startsWith(data, [0x76, 0x2f, 0x31, 0x01])) return 'OpenEXR';
    if (ascii(data, 0, 10) === '#?RADIANCE' || ascii(data, 0, 6) === '#?RGBE') return 'Radiance HDR';
    if (/^P[1-7]\s/.test(ascii(data, 0, 3))) return 'Netpbm (PBM/PGM/PPM/PAM)';
    return markupName(data);
  })();
  return { supported: false, name: name ?? 'unknown' };
}
