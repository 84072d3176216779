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
import type { Device } from '../api/device.js';

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

/** Where a removal runs: on this computer (default), or through an API server when `apiUrl` is given. */
export interface RunOptions {
  /** On-device model: a name from `rmbg models list` or a path to an .onnx file. Default: the manifest's default. */
  model?: string;
  /** Where the on-device model runs: `auto` (default: the GPU when a hardware one works, else the CPU), `gpu` (or a `device_unavailable` error), `cpu`. Default: RMBG_DEVICE, else the settings file, else auto. */
  device?: Device;
  /** Base URL of a server that speaks the API (e.g. `rmbg serve`): the call goes through the retrying client. */
  apiUrl?: string;
  /** API key for `apiUrl`. */
  apiKey?: string;
  /** Per-attempt time limit of a call to `apiUrl`, in milliseconds (default 180 000). */
  timeoutMs?: number;
}

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
const RUN_KEYS: readonly string[] = Object.keys({
  model: true,
  device: true,
  apiUrl: true,
  apiKey: true,
  timeoutMs: true,
  signal: true,
} satisfies Record<Exclude<keyof RemoveBackgroundOptions, keyof ImageOptions>, true>);

/** camelCase option → the API's field name: bgColor → bg_color. */
const fieldName = (name: string): string => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/**
 * Validates the image options with the API's schema (its messages, e.g. "bg_color must be …"); the run keys
 * and the caller's own keys (the batch's) pass through. Any other key is refused in the library's own words:
 * a misspelt option, or an API field such as `bg_color` or `image_url`, would otherwise be a silent no-op.
 */
export function parseImageOptions(options: object, ownKeys: readonly string[] = []): RemoveOptions {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(options)) {
    if (IMAGE_KEYS.includes(name)) fields[fieldName(name)] = value;
    else if (!RUN_KEYS.includes(name) && !ownKeys.includes(name)) {
      throw new RmbgError(
        'unknown_field',
        `unknown option '${name}'; allowed options: ${[...IMAGE_KEYS, ...RUN_KEYS, ...ownKeys].join(', ')}`,
      );
    }
  }
  return parseRemoveOptions(fields, CALLER_DEFAULT_OPTIONS);
}

export interface RemoteTarget {
  apiUrl: string;
  apiKey: string;
  timeoutMs: number | undefined;
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
  if (options.model !== undefined)
    throw new RmbgError('usage_error', 'model applies on this computer only; the server at apiUrl uses its own model');
  if (options.device !== undefined)
    throw new RmbgError(
      'usage_error',
      'device applies on this computer only; the server at apiUrl runs its model where it was started to',
    );
  return { apiUrl: options.apiUrl, apiKey: options.apiKey, timeoutMs: options.timeoutMs };
}
