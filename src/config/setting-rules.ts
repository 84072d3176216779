// The settings rmbg resolves and their precedence: flag > environment > user settings > built-in default.
// Free of the settings file (conf), so the library can resolve the data directory without loading it.

import envPaths from 'env-paths';
import { DEFAULT_DEVICE } from '../api/device.js';
import { CALL_SETTINGS, ENGINE_SETTINGS, SERVER_SETTINGS } from '../settings/index.js';
import { flagOf } from '../settings/setting.js';

/** The settings rmbg resolves by name from their sources; those whose row is `stored` also from the settings file. */
export const SETTING_ROWS = {
  apiUrl: CALL_SETTINGS.apiUrl,
  apiKey: CALL_SETTINGS.apiKey,
  dataDir: SERVER_SETTINGS.dataDir,
  device: ENGINE_SETTINGS.device,
  model: ENGINE_SETTINGS.model,
} as const;

export type SettingName = keyof typeof SETTING_ROWS;
export type SettingSource = 'flag' | 'env' | 'config' | 'default';

/** The settings the settings file may hold: the rows marked `stored` (`rmbg config set api-url|api-key|device`). */
export type StoredName = {
  [K in SettingName]: (typeof SETTING_ROWS)[K] extends { stored: true } ? K : never;
}[SettingName];
export const SETTING_NAMES = Object.keys(SETTING_ROWS) as SettingName[];
export const STORED_NAMES = SETTING_NAMES.filter((name) => 'stored' in SETTING_ROWS[name]) as StoredName[];

interface SettingRule {
  env: string;
  flag: string;
  /** Whether the user settings file may hold it. */
  stored: boolean;
  builtIn: () => string | undefined;
}

/** The defaults that are not one value in a row: the platform's folder, the device's default. */
const BUILT_IN: Partial<Record<SettingName, () => string>> = {
  dataDir: () => envPaths('rmbg', { suffix: '' }).data,
  device: () => DEFAULT_DEVICE,
};

export const SETTING_RULES = Object.fromEntries(
  SETTING_NAMES.map((name) => {
    const row = SETTING_ROWS[name];
    const rule: SettingRule = {
      env: row.env,
      flag: flagOf(name, row) as string,
      stored: 'stored' in row,
      builtIn: BUILT_IN[name] ?? (() => undefined),
    };
    return [name, rule];
  }),
) as Record<SettingName, SettingRule>;

export type ResolvedSetting = { value: string; source: SettingSource } | { value: undefined; source: 'unset' };

/** Empty strings count as "not given", so `RMBG_API_KEY= rmbg …` falls through to the next source. */
function given(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}

/** One setting from its sources, in precedence order; `stored` holds the user settings file's values. */
export function resolveFrom(
  name: SettingName,
  flagValue: string | undefined,
  env: NodeJS.ProcessEnv,
  stored: Partial<Record<SettingName, string>>,
): ResolvedSetting {
  const rule = SETTING_RULES[name];
  if (given(flagValue)) return { value: flagValue, source: 'flag' };
  const fromEnv = env[rule.env];
  if (given(fromEnv)) return { value: fromEnv, source: 'env' };
  const fromFile = rule.stored ? stored[name] : undefined;
  if (given(fromFile)) return { value: fromFile, source: 'config' };
  const builtIn = rule.builtIn();
  return given(builtIn) ? { value: builtIn, source: 'default' } : { value: undefined, source: 'unset' };
}

/** The local service's data directory (--data-dir > RMBG_DATA_DIR > the platform's user data dir); never in the settings file. */
export function dataDirOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return resolveFrom('dataDir', flag, env, {}).value as string;
}
