// The one option schema of POST /v1.0/removebg: fields, defaults, allowed values and validation.
// CLI flags, HTTP fields (all three content types), config keys and the OpenAPI document derive from it.

import { describeValue } from './describe-value.js';
import { RmbgError } from './errors.js';
import { parseColor, type Rgba } from './color.js';
import { LIMITS } from './limits.js';
import { API_FORMAT_NAMES, LOCAL_FORMAT_NAMES, type LocalFormat, type OutputFormat } from './media-types.js';

export const SIZES = ['preview', 'small', 'regular', 'medium', 'hd', 'full', '4k', 'auto', '50MP'] as const;
export type Size = (typeof SIZES)[number];

/** auto, then the API's output formats of api/media-types.ts's table (a new format is a row there). */
export const FORMATS = ['auto', ...API_FORMAT_NAMES] as const;
/** The API's values, and the formats only rmbg's own callers write on this computer (psd, tiff). */
export type Format = (typeof FORMATS)[number] | LocalFormat;
export type { OutputFormat };

/** Ceilings on result pixels, per size (api-spec: Endpoints, size ceilings). */
export const SIZE_MAX_PIXELS: Record<Size, number> = {
  preview: 250_000,
  small: 250_000,
  regular: 250_000,
  medium: 1_500_000,
  hd: 4_000_000,
  full: 25_000_000,
  '4k': 25_000_000,
  auto: 25_000_000,
  '50MP': 50_000_000,
};

export const SOURCE_FIELDS = ['image_file', 'image_url', 'image_file_b64'] as const;
export type SourceField = (typeof SOURCE_FIELDS)[number];

interface FieldBase {
  name: string;
  description: string;
}
interface EnumField extends FieldBase {
  kind: 'enum';
  values: readonly string[];
  /** Values rmbg's own callers also take (scope 'local'); the HTTP API refuses them as any value not in `values`. */
  localValues?: readonly string[];
  default: string | undefined;
}
interface BooleanField extends FieldBase {
  kind: 'boolean';
  default: boolean;
}
interface ColorField extends FieldBase {
  kind: 'color';
}
export type OptionField = EnumField | BooleanField | ColorField;

/** The option fields (everything but the image source), in the order the spec lists them. */
export const OPTION_FIELDS = [
  {
    name: 'size',
    kind: 'enum',
    values: SIZES,
    default: 'preview',
    description: 'Result size ceiling (never upscaled).',
  },
  {
    name: 'format',
    kind: 'enum',
    values: FORMATS,
    localValues: LOCAL_FORMAT_NAMES,
    default: 'auto',
    description:
      'auto: PNG if the result has transparency, JPG if opaque. On this computer only: psd (the photo ' +
      'as a layer, the cutout as its layer mask), tiff (the photo with an unassociated alpha, its depth ' +
      'and ICC profile kept).',
  },
  { name: 'crop', kind: 'boolean', default: false, description: 'Trim empty borders to the foreground box.' },
  {
    name: 'bg_color',
    kind: 'color',
    description: 'Flatten onto a colour: CSS colour name, or hex with 3, 4, 6 or 8 digits (leading # optional).',
  },
  { name: 'type', kind: 'enum', values: ['auto'], default: undefined, description: 'Foreground type; only auto.' },
  {
    name: 'type_level',
    kind: 'enum',
    values: ['none'],
    default: undefined,
    description: 'Classification level; only none.',
  },
  { name: 'channels', kind: 'enum', values: ['rgba'], default: undefined, description: 'Result channels; only rgba.' },
] as const satisfies readonly OptionField[];

export type OptionName = (typeof OPTION_FIELDS)[number]['name'];

/**
 * Parameters of the imitated API that this service does not support. A non-empty value is rejected
 * (400 unsupported_parameter); an empty value means "not set" and is accepted, as the spec only rejects
 * non-empty values and form clients often send every field of a form.
 */
export const UNSUPPORTED_FIELDS = [
  'bg_image_url',
  'bg_image_file',
  'shadow',
  'add_shadow',
  'shadow_type',
  'shadow_opacity',
  'roi',
  'crop_margin',
  'scale',
  'position',
  'semitransparency',
] as const;

export interface RemoveOptions {
  size: Size;
  format: Format;
  crop: boolean;
  /** Absent: transparency is kept where the output format supports it. */
  bgColor: Rgba | undefined;
}

export const DEFAULT_OPTIONS: RemoveOptions = { size: 'preview', format: 'auto', crop: false, bgColor: undefined };

/**
 * Defaults of rmbg's own callers, the CLI and the library: full resolution (25 MP ceiling, never upscaled). A
 * photographer running rmbg on their own photos expects it, and the API charges the same for every size; the
 * HTTP API keeps the spec's default, preview.
 */
export const CALLER_DEFAULT_OPTIONS: RemoveOptions = { ...DEFAULT_OPTIONS, size: 'full' };

const OPTION_NAMES: ReadonlySet<string> = new Set(OPTION_FIELDS.map((f) => f.name));
const UNSUPPORTED_NAMES: ReadonlySet<string> = new Set(UNSUPPORTED_FIELDS);
const SOURCE_NAMES: ReadonlySet<string> = new Set(SOURCE_FIELDS);

/** Empty values mean "not set", in every transport. */
export function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

function parseBoolean(name: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new RmbgError('invalid_option', `${name} must be true or false; got ${describeValue(value)}`);
}

/** Who parses: the HTTP API (the spec's values only), or rmbg's own callers (the CLI, the library, the settings file),
 * which also take the local values; through a server those are refused before anything is sent. */
export type OptionScope = 'api' | 'local';

/** A field's values in a scope. */
export function enumValues(field: EnumField, scope: OptionScope): readonly string[] {
  return scope === 'local' ? [...field.values, ...(field.localValues ?? [])] : field.values;
}

function parseEnum(field: EnumField, value: unknown, scope: OptionScope = 'api'): string {
  const values = enumValues(field, scope);
  if (typeof value === 'string' && values.includes(value)) return value;
  const allowed = values.join(', ');
  const got = describeValue(value);
  // Values of type, type_level and channels other than the allowed one are features we do not offer.
  const code = values.length === 1 ? 'unsupported_parameter' : 'invalid_option';
  throw new RmbgError(code, `${field.name} must be ${values.length === 1 ? '' : 'one of '}${allowed}; got ${got}`);
}

/**
 * Validates the option fields of a request (any transport) against the closed schema.
 * Image source fields are checked by the caller, which knows how it received them; they are skipped here.
 * Empty values mean "not set": the field's default applies. `scope` 'local' also takes the local-only values.
 */
export function parseRemoveOptions(
  fields: Record<string, unknown>,
  defaults: RemoveOptions = DEFAULT_OPTIONS,
  scope: OptionScope = 'api',
): RemoveOptions {
  const options: RemoveOptions = { ...defaults };
  for (const [name, value] of Object.entries(fields)) {
    if (SOURCE_NAMES.has(name)) continue;
    if (UNSUPPORTED_NAMES.has(name)) {
      if (isEmpty(value)) continue;
      throw new RmbgError(
        'unsupported_parameter',
        `${name} is not supported by this service; remove it from the request`,
      );
    }
    if (!OPTION_NAMES.has(name)) {
      const allowed = [...SOURCE_FIELDS, ...OPTION_FIELDS.map((f) => f.name)].join(', ');
      throw new RmbgError('unknown_field', `unknown field '${name}'; allowed fields: ${allowed}`);
    }
    if (isEmpty(value)) continue;
    const field = OPTION_FIELDS.find((f) => f.name === name) as OptionField;
    switch (field.name) {
      case 'size':
        options.size = parseEnum(field as EnumField, value) as Size;
        break;
      case 'format':
        options.format = parseEnum(field as EnumField, value, scope) as Format;
        break;
      case 'crop':
        options.crop = parseBoolean('crop', value);
        break;
      case 'bg_color':
        if (typeof value !== 'string')
          throw new RmbgError('invalid_option', `bg_color must be a string; got ${describeValue(value)}`);
        options.bgColor = parseColor(value);
        break;
      default:
        parseEnum(field as EnumField, value); // type, type_level, channels: validated, no effect
    }
  }
  return options;
}

/** The options' values that only rmbg's own callers on this computer take ('format=psd'); none for the API's. */
export function localOnlyValues(options: RemoveOptions): string[] {
  return (LOCAL_FORMAT_NAMES as readonly string[]).includes(options.format) ? [`format=${options.format}`] : [];
}

/** A canonical string of the options that change the output, for idempotency fingerprints and journal keys. */
export function canonicalOptions(options: RemoveOptions): string {
  const color = options.bgColor
    ? `${options.bgColor.r},${options.bgColor.g},${options.bgColor.b},${options.bgColor.alpha}`
    : '';
  return `size=${options.size};format=${options.format};crop=${options.crop};bg=${color}`;
}

/** The options as HTTP form fields, for the client (defaults included so a server's defaults cannot differ). */
export function optionsToFields(options: RemoveOptions): Record<string, string> {
  const fields: Record<string, string> = { size: options.size, format: options.format, crop: String(options.crop) };
  if (options.bgColor) fields.bg_color = rgbaToHex(options.bgColor);
  return fields;
}

function rgbaToHex(color: Rgba): string {
  const hex = (n: number) => n.toString(16).padStart(2, '0');
  const alpha = Math.round(color.alpha * 255);
  return `${hex(color.r)}${hex(color.g)}${hex(color.b)}${alpha === 255 ? '' : hex(alpha)}`;
}

/** Idempotency-Key header rules: 1 to LIMITS.maxIdempotencyKeyLength visible ASCII characters. */
export function validateIdempotencyKey(key: string): string {
  if (key.length === 0 || key.length > LIMITS.maxIdempotencyKeyLength || !/^[\x21-\x7e]+$/.test(key)) {
    throw new RmbgError(
      'invalid_idempotency_key',
      `Idempotency-Key must be 1 to ${LIMITS.maxIdempotencyKeyLength} visible ASCII characters; got ${key.length} characters`,
    );
  }
  return key;
}
