// The settings rmbg resolves and their precedence: flag > environment > user settings > built-in default.
// Free of the settings file (conf), so the library can resolve the data directory without loading it.

import envPaths from 'env-paths';
import { DEFAULT_DEVICE } from '../api/device.js';
import { CALL_SETTINGS, ENGINE_SETTINGS, SERVER_SETTINGS } from '../settings/index.js';
import { flagOf, type SettingRow } from '../settings/setting.js';

export type SettingName = 'apiUrl' | 'apiKey' | 'dataDir' | 'device' | 'model';
export type SettingSource = 'flag' | 'env' | 'config' | 'default';

interface SettingRule {
  env: string;
  flag: string;
  /** Whether the user settings file may hold it. */
  stored: boolean;
  builtIn: () => string | undefined;
}

/** The flag and environment variable of a row of src/settings. */
const namesOf = (name: string, row: SettingRow & { env: string }) => ({
  env: row.env,
  flag: flagOf(name, row) as string,
});

export const SETTING_RULES: Record<SettingName, SettingRule> = {
  apiUrl: { ...namesOf('apiUrl', CALL_SETTINGS.apiUrl), stored: true, builtIn: () => undefined },
  apiKey: { ...namesOf('apiKey', CALL_SETTINGS.apiKey), stored: true, builtIn: () => undefined },
  dataDir: {
    ...namesOf('dataDir', SERVER_SETTINGS.dataDir),
    stored: false,
    builtIn: () => envPaths('rmbg', { suffix: '' }).data,
  },
  device: { ...namesOf('device', ENGINE_SETTINGS.device), stored: true, builtIn: () => DEFAULT_DEVICE },
  model: { ...namesOf('model', ENGINE_SETTINGS.model), stored: false, builtIn: () => undefined },
};

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
