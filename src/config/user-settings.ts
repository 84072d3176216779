// The user's stored settings (conf, project 'rmbg'): API URL, API key and default image options.
// Only settings live here; credits and keys of the local service live in SQLite under the data dir.

import Conf from 'conf';
import { RmbgError } from '../api/errors.js';

export interface StoredSettings {
  apiUrl?: string;
  apiKey?: string;
  /** Default option fields for `rmbg remove`, by their API names, e.g. { "size": "hd", "format": "png" }. */
  defaults?: Record<string, string | boolean>;
}

export type StoredSettingName = keyof StoredSettings;

/** Overrides where the settings file lives; tests point it at a temp dir, users at another profile. */
export const CONFIG_DIR_ENV = 'RMBG_CONFIG_DIR';

export function openUserSettings(env: NodeJS.ProcessEnv = process.env): Conf<StoredSettings> {
  const cwd = env[CONFIG_DIR_ENV] || undefined;
  try {
    return new Conf<StoredSettings>({
      projectName: 'rmbg',
      projectSuffix: '',
      // The file holds an API key: readable by its owner only.
      configFileMode: 0o600,
      accessPropertiesByDotNotation: false,
      ...(cwd ? { cwd } : {}),
    });
  } catch (error) {
    throw new RmbgError('usage_error', `cannot read the rmbg settings file: ${(error as Error).message}; fix or delete it`, { cause: error });
  }
}

/** The stored settings, checked for the types rmbg expects, so a hand-edited file fails with a clear message. */
export function readUserSettings(env: NodeJS.ProcessEnv = process.env): { settings: StoredSettings; path: string } {
  const store = openUserSettings(env);
  const raw = store.store as Record<string, unknown>;
  const settings: StoredSettings = {};
  for (const name of ['apiUrl', 'apiKey'] as const) {
    const value = raw[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw invalidSetting(store.path, name, 'a string', value);
    settings[name] = value;
  }
  const defaults = raw['defaults'];
  if (defaults !== undefined) {
    if (typeof defaults !== 'object' || defaults === null || Array.isArray(defaults)) {
      throw invalidSetting(store.path, 'defaults', 'an object of option fields, e.g. {"size":"hd"}', defaults);
    }
    settings.defaults = defaults as Record<string, string | boolean>;
  }
  return { settings, path: store.path };
}

export function writeUserSetting<K extends StoredSettingName>(name: K, value: StoredSettings[K], env: NodeJS.ProcessEnv = process.env): void {
  const store = openUserSettings(env);
  if (value === undefined) store.delete(name);
  else store.set(name, value);
}

function invalidSetting(path: string, name: string, expected: string, got: unknown): RmbgError {
  return new RmbgError('usage_error', `setting '${name}' in ${path} must be ${expected}; got ${JSON.stringify(got)}`);
}
