// The user's stored settings (the settings file of project 'rmbg'): API URL, API key and default image options.
// Only settings live here; credits and keys of the local service live in SQLite under the data dir.
// Reading is a plain JSON read: every `rmbg remove` reads this file, and conf (which writes it,
// settings-writer.ts) takes a few hundred milliseconds to import.

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import envPaths from 'env-paths';
import { RmbgError, messageOf } from '../api/errors.js';
import { STORED_NAMES, type StoredName } from './setting-rules.js';

/** The rows marked `stored` (setting-rules.ts), and the default image options. */
export type StoredSettings = Partial<Record<StoredName, string>> & {
  /** Default option fields for `rmbg remove`, by their API names, e.g. { "size": "hd", "format": "png" }. */
  defaults?: Record<string, string | boolean>;
};

export type StoredSettingName = keyof StoredSettings;

/** Overrides where the settings file lives; tests point it at a temp dir, users at another profile. */
export const CONFIG_DIR_ENV = 'RMBG_CONFIG_DIR';

/** The settings file: `config.json` in RMBG_CONFIG_DIR, else in the platform's config folder for rmbg. */
export function settingsPathOf(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env[CONFIG_DIR_ENV] || envPaths('rmbg', { suffix: '' }).config, 'config.json');
}

export function unreadableSettings(error: unknown): RmbgError {
  return new RmbgError('usage_error', `cannot read the rmbg settings file: ${messageOf(error)}; fix or delete it`, {
    cause: error,
  });
}

/** The file's object; {} when there is no file yet. */
function readSettingsFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw unreadableSettings(error);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw unreadableSettings(error);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw unreadableSettings(new Error(`${path} does not hold a JSON object`));
  return parsed as Record<string, unknown>;
}

/** The stored settings, checked for the types rmbg expects, so a hand-edited file fails with a clear message. */
export function readUserSettings(env: NodeJS.ProcessEnv = process.env): { settings: StoredSettings; path: string } {
  const path = settingsPathOf(env);
  const raw = readSettingsFile(path);
  const settings: StoredSettings = {};
  for (const name of STORED_NAMES) {
    const value = raw[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw invalidSetting(path, name, 'a string', value);
    settings[name] = value;
  }
  const defaults = raw.defaults;
  if (defaults !== undefined) {
    if (typeof defaults !== 'object' || defaults === null || Array.isArray(defaults)) {
      throw invalidSetting(path, 'defaults', 'an object of option fields, e.g. {"size":"hd"}', defaults);
    }
    settings.defaults = defaults as Record<string, string | boolean>;
  }
  return { settings, path };
}

function invalidSetting(path: string, name: string, expected: string, got: unknown): RmbgError {
  return new RmbgError('usage_error', `setting '${name}' in ${path} must be ${expected}; got ${JSON.stringify(got)}`);
}
