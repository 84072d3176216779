// The image formats of the API and their media types: named from the first bytes of an image (never
// from a file name or a declared type), and mapped between output format and media type both ways.

import type { OutputFormat } from './options.js';

/** The input formats the API accepts, as named from their signature. */
export type SupportedFormat = 'jpeg' | 'png' | 'webp';

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] as const;

export const MIME_OF_INPUT: Record<SupportedFormat, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
};

export const MIME_OF_FORMAT: Record<OutputFormat, string> = { png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp' };

function startsWith(data: Buffer, bytes: readonly number[]): boolean {
  return data.length >= bytes.length && bytes.every((byte, i) => data[i] === byte);
}

/** JPG, PNG or WebP by signature; undefined for anything else. */
export function supportedFormatOf(data: Buffer): SupportedFormat | undefined {
  if (startsWith(data, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (startsWith(data, PNG_SIGNATURE)) return 'png';
  if (data.length >= 12 && data.toString('latin1', 0, 4) === 'RIFF' && data.toString('latin1', 8, 12) === 'WEBP')
    return 'webp';
  return undefined;
}

/** The output format a media type names, or undefined when it is none of PNG, JPG, WebP. */
export function formatOfMime(mimeType: string): OutputFormat | undefined {
  return (Object.keys(MIME_OF_FORMAT) as OutputFormat[]).find((format) => MIME_OF_FORMAT[format] === mimeType);
}

/** The media type of a Content-Type header, lower-cased, without parameters ('' when absent). */
export function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}
