// Resolves rmbg's settings in one precedence order: CLI flag > environment > user settings > built-in default,
// and tells where each value came from (for --json output and error messages).

import envPaths from 'env-paths';
import { RmbgError } from '../api/errors.js';
import { parseRemoveOptions } from '../api/options.js';
import { readUserSettings, type StoredSettings } from './user-settings.js';

export type SettingName = 'apiUrl' | 'apiKey' | 'dataDir';
export type SettingSource = 'flag' | 'env' | 'config' | 'default';

interface SettingRule {
  env: string;
  flag: string;
  /** Whether the user settings file may hold it. */
  stored: boolean;
  builtIn: () => string | undefined;
}

export const SETTING_RULES: Record<SettingName, SettingRule> = {
  apiUrl: { env: 'RMBG_API_URL', flag: '--api-url', stored: true, builtIn: () => undefined },
  apiKey: { env: 'RMBG_API_KEY', flag: '--api-key', stored: true, builtIn: () => undefined },
  dataDir: { env: 'RMBG_DATA_DIR', flag: '--data-dir', stored: false, builtIn: () => envPaths('rmbg', { suffix: '' }).data },
};

export type ResolvedSetting = { value: string; source: SettingSource } | { value: undefined; source: 'unset' };

export interface Config {
  apiUrl: ResolvedSetting;
  apiKey: ResolvedSetting;
  dataDir: ResolvedSetting;
  /** Default option fields from the settings file, already validated against the option schema. */
  defaultFields: Record<string, string | boolean>;
  /** Where the user settings file is (it may not exist). */
  settingsPath: string;
}

export type ConfigFlags = Partial<Record<SettingName, string | undefined>>;

/** Empty strings count as "not given", so `RMBG_API_KEY= rmbg …` falls through to the next source. */
function given(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}

export function resolveSetting(
  name: SettingName,
  flagValue: string | undefined,
  sources: { env?: NodeJS.ProcessEnv; stored?: Partial<Record<SettingName, string>> } = {},
): ResolvedSetting {
  const rule = SETTING_RULES[name];
  const env = sources.env ?? process.env;
  if (given(flagValue)) return { value: flagValue, source: 'flag' };
  const fromEnv = env[rule.env];
  if (given(fromEnv)) return { value: fromEnv, source: 'env' };
  const stored = rule.stored ? (sources.stored ?? storedValues(readUserSettings(env).settings))[name] : undefined;
  if (given(stored)) return { value: stored, source: 'config' };
  const builtIn = rule.builtIn();
  return given(builtIn) ? { value: builtIn, source: 'default' } : { value: undefined, source: 'unset' };
}

function storedValues(settings: StoredSettings): Partial<Record<SettingName, string>> {
  return { apiUrl: settings.apiUrl, apiKey: settings.apiKey };
}

export function loadConfig(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const { settings, path } = readUserSettings(env);
  const stored = storedValues(settings);
  const defaultFields = settings.defaults ?? {};
  try {
    parseRemoveOptions(defaultFields);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new RmbgError('usage_error', `'defaults' in ${path} is invalid: ${reason}`, { cause: error });
  }
  return {
    apiUrl: resolveSetting('apiUrl', flags.apiUrl, { env, stored }),
    apiKey: resolveSetting('apiKey', flags.apiKey, { env, stored }),
    dataDir: resolveSetting('dataDir', flags.dataDir, { env, stored }),
    defaultFields,
    settingsPath: path,
  };
}

/** A setting the command cannot run without: its value, or a usage_error naming every way to give it. */
export function requireSetting(config: Config, name: SettingName): string {
  const setting = config[name];
  if (setting.value !== undefined) return setting.value;
  const rule = SETTING_RULES[name];
  const stored = rule.stored ? `, or '${name}' in ${config.settingsPath}` : '';
  throw new RmbgError('usage_error', `no ${describe(name)} given: pass ${rule.flag} or set ${rule.env}${stored}`);
}

function describe(name: SettingName): string {
  return { apiUrl: 'API URL', apiKey: 'API key', dataDir: 'data directory' }[name];
}
