// The library's options: the API's image options in camelCase, validated by the one schema of src/api
// (same rules, same messages as the HTTP API and the CLI), plus where to run.

import { RmbgError } from '../api/errors.js';
import {
  CALLER_DEFAULT_OPTIONS,
  parseRemoveOptions,
  type Format,
  type RemoveOptions,
  type Size,
} from '../api/options.js';
import { CALL_SETTINGS, CALL_TABLE } from '../settings/index.js';
import { refuseEngineSettings } from './engine-settings.js';
import { checkOptions, defaultsOf, type OptionsOf, type SettingsTable } from '../settings/setting.js';

const CALL_DEFAULTS = defaultsOf(CALL_SETTINGS);

/** The image options of POST /v1.0/removebg, camelCased. */
export interface ImageOptions {
  /** Result size ceiling, never upscaled. Default `full` (as in the CLI: on this computer every size costs the same). */
  size?: Size;
  /** `auto` (default): PNG when the result has transparency, JPG when opaque. */
  format?: Format;
  /** Trim to the foreground box. */
  crop?: boolean;
  /** Flatten onto a colour: CSS name or hex with 3, 4, 6 or 8 digits, `#` optional. */
  bgColor?: string;
}

/**
 * Where and how a removal runs: on this computer (default; model, device, threads…), or through an API server
 * when `apiUrl` is given; and the metadata the result keeps. The rows of src/settings (CALL_TABLE).
 */
export type RunOptions = OptionsOf<typeof CALL_TABLE>;

export interface RemoveBackgroundOptions extends ImageOptions, RunOptions {
  /** Aborting rejects the call with the signal's reason (an `AbortError` unless you give another). */
  signal?: AbortSignal;
}

/** Every image option, checked by the compiler against ImageOptions (a key added there must be added here). */
const IMAGE_KEYS: readonly string[] = Object.keys({
  size: true,
  format: true,
  crop: true,
  bgColor: true,
} satisfies Record<keyof ImageOptions, true>);

/** camelCase option → the API's field name: bgColor → bg_color. */
const fieldName = (name: string): string => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/**
 * Validates the image options with the API's schema (its messages, e.g. "bg_color must be …") and the rest with
 * their rows in `table` (CALL_TABLE, or with the batch's rows for removeBackgrounds()). Any other key is refused in
 * the library's own words: a misspelt option, or an API field such as `bg_color` or `image_url`, would otherwise
 * be a silent no-op.
 */
export function parseImageOptions(options: object, table: SettingsTable = CALL_TABLE): RemoveOptions {
  checkOptions(table, options, { before: IMAGE_KEYS, after: ['signal'] });
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(options)) if (IMAGE_KEYS.includes(name)) fields[fieldName(name)] = value;
  return parseRemoveOptions(fields, CALLER_DEFAULT_OPTIONS, 'local');
}

export interface RemoteTarget {
  apiUrl: string;
  apiKey: string;
  timeoutMs: number;
}

/** The server to call, or undefined for on-device; an API key without a URL (or the reverse) is a mistake worth naming. */
export function remoteTarget(options: RunOptions): RemoteTarget | undefined {
  if (options.apiUrl === undefined) {
    if (options.apiKey !== undefined)
      throw new RmbgError(
        'usage_error',
        'apiKey was given without apiUrl; pass the server URL too, or drop apiKey to run on this computer',
      );
    return undefined;
  }
  if (!options.apiKey) throw new RmbgError('usage_error', 'apiUrl needs an apiKey');
  refuseEngineSettings(options);
  return { apiUrl: options.apiUrl, apiKey: options.apiKey, timeoutMs: options.timeoutMs ?? CALL_DEFAULTS.timeoutMs };
}
