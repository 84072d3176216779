// Resolves rmbg's settings in one precedence order: CLI flag > environment > user settings > built-in default,
// and tells where each value came from (for --json output and error messages).

import { RmbgError, messageOf } from '../api/errors.js';
import { parseRemoveOptions } from '../api/options.js';
import { resolveFrom, SETTING_NAMES, SETTING_RULES, type ResolvedSetting, type SettingName } from './setting-rules.js';
import { readUserSettings } from './user-settings.js';

export { SETTING_RULES, type ResolvedSetting, type SettingName, type SettingSource } from './setting-rules.js';

/** Each setting of setting-rules.ts resolved, with where it came from. */
export interface Config extends Record<SettingName, ResolvedSetting> {
  /** Default option fields from the settings file, already validated against the option schema. */
  defaultFields: Record<string, string | boolean>;
  /** Where the user settings file is (it may not exist). */
  settingsPath: string;
}

export type ConfigFlags = Partial<Record<SettingName, string | undefined>>;

export function resolveSetting(
  name: SettingName,
  flagValue: string | undefined,
  sources: { env?: NodeJS.ProcessEnv; stored?: Partial<Record<SettingName, string>> } = {},
): ResolvedSetting {
  const env = sources.env ?? process.env;
  if (sources.stored) return resolveFrom(name, flagValue, env, sources.stored);
  // The settings file is read only when neither the flag nor the environment gives a value.
  const early = resolveFrom(name, flagValue, env, {});
  if (early.source === 'flag' || early.source === 'env' || !SETTING_RULES[name].stored) return early;
  return resolveFrom(name, flagValue, env, readUserSettings(env).settings);
}

export function loadConfig(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const { settings, path } = readUserSettings(env);
  const defaultFields = settings.defaults ?? {};
  try {
    parseRemoveOptions(defaultFields, undefined, 'local');
  } catch (error) {
    const reason = messageOf(error);
    throw new RmbgError('usage_error', `'defaults' in ${path} is invalid: ${reason}`, { cause: error });
  }
  const resolved = Object.fromEntries(
    SETTING_NAMES.map((name) => [name, resolveSetting(name, flags[name], { env, stored: settings })]),
  ) as Record<SettingName, ResolvedSetting>;
  return { ...resolved, defaultFields, settingsPath: path };
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
  return { apiUrl: 'API URL', apiKey: 'API key', dataDir: 'data directory', device: 'device', model: 'model' }[name];
}
