// The media types of the API: the request body encodings, the input formats (named from an image's first bytes,
// never from a file name or a declared type) and the output formats, one table each.

import { LIMITS } from './limits.js';

/** The request body encodings POST /v1.0/removebg accepts; anything else is 415. */
export const REQUEST_ENCODINGS = {
  multipart: 'multipart/form-data',
  json: 'application/json',
  urlencoded: 'application/x-www-form-urlencoded',
} as const;

export type RequestEncoding = keyof typeof REQUEST_ENCODINGS;

/** How a result is encoded: rmbg's own PNG encoder, deflating bands in parallel (engine/output/png-encode.ts),
 * sharp's encoder of that name with these options, or the photo re-read with its alpha for a layered file. */
export type OutputEncoder =
  | { by: 'png-bands' }
  /** The photo's own pixels (its depth and ICC profile) with the cutout's alpha: engine/layered-output.ts. */
  | { by: 'layers' }
  | { by: 'sharp'; method: 'jpeg' | 'webp'; options: Readonly<Record<string, number | string>> };

export interface OutputFormatRow {
  /** Its name for people: the web page's choices, its result line. */
  title: string;
  mimeType: string;
  /** A result file's extension, with its dot: `rmbg remove`'s output files, the web page's download. */
  extension: string;
  /** Result pixels at most, whatever the size (undefined: only the size's ceiling). */
  maxPixels: number | undefined;
  /** Whether the format keeps an alpha channel; one that does not gets the result flattened onto white. */
  keepsAlpha: boolean;
  /** Written only by rmbg's own callers on this computer: the HTTP API refuses it as any unknown value (api-spec). */
  localOnly: boolean;
  encoder: OutputEncoder;
}

/**
 * The output formats, one row each: the `format` option's values, the result's media type, its file extension,
 * its encoder, the OpenAPI document's 200 answers and its `format` field (which the web page reads), and the
 * per-format pixel cap all come from here. A new row also needs its EXIF embedding (engine/image/embed-exif.ts),
 * which the compiler points at; test/unit/api/output-formats.test.ts checks each row does what its readers need.
 */
export const OUTPUT_FORMATS = {
  png: {
    title: 'PNG',
    mimeType: 'image/png',
    extension: '.png',
    maxPixels: LIMITS.pngMaxPixels,
    keepsAlpha: true,
    localOnly: false,
    encoder: { by: 'png-bands' },
  },
  jpg: {
    title: 'JPG',
    mimeType: 'image/jpeg',
    extension: '.jpg',
    maxPixels: undefined,
    keepsAlpha: false,
    localOnly: false,
    encoder: { by: 'sharp', method: 'jpeg', options: { quality: 90, chromaSubsampling: '4:4:4' } },
  },
  webp: {
    title: 'WebP',
    mimeType: 'image/webp',
    extension: '.webp',
    maxPixels: undefined,
    keepsAlpha: true,
    localOnly: false,
    encoder: { by: 'sharp', method: 'webp', options: { quality: 90, alphaQuality: 100, effort: 2 } },
  },
  psd: {
    title: 'Photoshop (layered)',
    mimeType: 'image/vnd.adobe.photoshop',
    extension: '.psd',
    maxPixels: undefined,
    keepsAlpha: true,
    localOnly: true,
    encoder: { by: 'layers' },
  },
  tiff: {
    title: 'TIFF',
    mimeType: 'image/tiff',
    extension: '.tif',
    maxPixels: undefined,
    keepsAlpha: true,
    localOnly: true,
    encoder: { by: 'layers' },
  },
} as const satisfies Record<string, OutputFormatRow>;

export type OutputFormat = keyof typeof OUTPUT_FORMATS;

export const OUTPUT_FORMAT_NAMES = Object.keys(OUTPUT_FORMATS) as OutputFormat[];

/** The formats of the API (api-spec's `format` values) and those only rmbg's own callers write, on this computer. */
export type ApiFormat = {
  [F in OutputFormat]: (typeof OUTPUT_FORMATS)[F]['localOnly'] extends false ? F : never;
}[OutputFormat];
export type LocalFormat = Exclude<OutputFormat, ApiFormat>;
export const API_FORMAT_NAMES = OUTPUT_FORMAT_NAMES.filter((name) => !OUTPUT_FORMATS[name].localOnly) as ApiFormat[];
export const LOCAL_FORMAT_NAMES = OUTPUT_FORMAT_NAMES.filter((name) => OUTPUT_FORMATS[name].localOnly) as LocalFormat[];

/** The formats whose row keeps alpha, as a type: format=auto's choice for a transparent result must be one. */
type AlphaFormat = {
  [F in OutputFormat]: (typeof OUTPUT_FORMATS)[F]['keepsAlpha'] extends true ? F : never;
}[OutputFormat];

/** What format=auto chooses (engine/pipeline.ts `chooseFormat`, api-spec rule 4): a format that keeps alpha when the
 * result has transparency, else the opaque one. */
export const AUTO_FORMAT = { transparent: 'png', opaque: 'jpg' } as const satisfies {
  transparent: AlphaFormat;
  opaque: OutputFormat;
};

export const MIME_OF_FORMAT = Object.fromEntries(
  OUTPUT_FORMAT_NAMES.map((format) => [format, OUTPUT_FORMATS[format].mimeType]),
) as Record<OutputFormat, string>;

/** A format's cap on result pixels whatever the size (Infinity: none); auto is capped like what it may choose. */
export function formatMaxPixels(format: OutputFormat | 'auto'): number {
  const formats: readonly OutputFormat[] = format === 'auto' ? Object.values(AUTO_FORMAT) : [format];
  return Math.min(...formats.map((name) => OUTPUT_FORMATS[name].maxPixels ?? Number.POSITIVE_INFINITY));
}

/** The output format a media type names, or undefined when it is none of them. */
export function formatOfMime(mimeType: string): OutputFormat | undefined {
  return OUTPUT_FORMAT_NAMES.find((format) => OUTPUT_FORMATS[format].mimeType === mimeType);
}

/** The input formats the API accepts, as named from their signature. */
export type SupportedFormat = 'jpeg' | 'png' | 'webp';

export const MIME_OF_INPUT: Record<SupportedFormat, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
};

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] as const;

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

/**
 * Photo formats the API does not take, which rmbg's own callers (the CLI and the library, on this computer or
 * through a server) decode here: `engine/decode-input.ts`. `rmbg serve` refuses them as any other format.
 */
export const CONVERTIBLE_FORMATS = {
  heic: { name: 'HEIC', extensions: ['.heic', '.heif', '.hif'] },
  avif: { name: 'AVIF', extensions: ['.avif'] },
  tiff: { name: 'TIFF', extensions: ['.tif', '.tiff'] },
} as const satisfies Record<string, { name: string; extensions: readonly string[] }>;

export type ConvertibleFormat = keyof typeof CONVERTIBLE_FORMATS;

/**
 * Camera RAW files, which rmbg's own callers develop or read the camera's preview of (engine/raw/): named by their
 * content (engine/raw/raw-kind.ts), their extensions taken by a folder walk. `rmbg serve` refuses them.
 */
export const RAW_FORMATS = {
  dng: { name: 'DNG', extensions: ['.dng'] },
  cr2: { name: 'Canon CR2', extensions: ['.cr2'] },
  cr3: { name: 'Canon CR3', extensions: ['.cr3'] },
  nef: { name: 'Nikon NEF', extensions: ['.nef', '.nrw'] },
  arw: { name: 'Sony ARW', extensions: ['.arw', '.srf', '.sr2'] },
  raf: { name: 'Fujifilm RAF', extensions: ['.raf'] },
  orf: { name: 'Olympus ORF', extensions: ['.orf'] },
  rw2: { name: 'Panasonic RW2', extensions: ['.rw2'] },
  pef: { name: 'Pentax PEF', extensions: ['.pef'] },
} as const satisfies Record<string, { name: string; extensions: readonly string[] }>;

export type RawFormat = keyof typeof RAW_FORMATS;

/** The RAW kinds as users read them. */
export const RAW_FORMATS_TEXT = `camera RAW (${Object.keys(RAW_FORMATS)
  .map((kind) => kind.toUpperCase())
  .join(', ')})`;

/** Every photo format rmbg's own callers take, as users read them (messages, --help). */
export const PHOTO_FORMATS_TEXT = `JPG, PNG, WebP, HEIC/HEIF, AVIF, TIFF or ${RAW_FORMATS_TEXT}`;

/** File extensions a folder walk takes as photos: the API's formats, the convertible ones and the RAW ones. */
export const PHOTO_EXTENSIONS: readonly string[] = [
  ...['.jpg', '.jpeg', '.png', '.webp'],
  ...Object.values(CONVERTIBLE_FORMATS).flatMap((format) => format.extensions),
  ...Object.values(RAW_FORMATS).flatMap((format) => format.extensions),
];

const HEIC_BRANDS = ['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis'];

/** ISO media (HEIF) by the major brand of its `ftyp` box, or for the generic `mif1`/`msf1` by its compatible brands. */
function heifFormatOf(data: Buffer): ConvertibleFormat | undefined {
  if (data.length < 16 || data.toString('latin1', 4, 8) !== 'ftyp') return undefined;
  const major = data.toString('latin1', 8, 12);
  if (major === 'avif' || major === 'avis') return 'avif';
  if (HEIC_BRANDS.includes(major)) return 'heic';
  if (major !== 'mif1' && major !== 'msf1') return undefined;
  const boxEnd = Math.min(data.readUInt32BE(0), data.length);
  const compatible: string[] = [];
  for (let at = 16; at + 4 <= boxEnd; at += 4) compatible.push(data.toString('latin1', at, at + 4));
  return compatible.includes('avif') || compatible.includes('avis') ? 'avif' : 'heic';
}

/** HEIC/HEIF, AVIF or TIFF by signature; undefined for anything else. */
export function convertibleFormatOf(data: Buffer): ConvertibleFormat | undefined {
  if (startsWith(data, [0x49, 0x49, 0x2a, 0x00]) || startsWith(data, [0x4d, 0x4d, 0x00, 0x2a])) return 'tiff';
  return heifFormatOf(data);
}

/** The media type of a Content-Type header, lower-cased, without parameters ('' when absent). */
export function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}
