// Writes one setting into the user settings file (user-settings.ts reads it): conf, for its atomic write and
// owner-only file mode. Only `rmbg config set|unset` imports this, so no other command pays conf's import.

import { dirname } from 'node:path';
import Conf from 'conf';
import { settingsPathOf, unreadableSettings, type StoredSettingName, type StoredSettings } from './user-settings.js';

function openUserSettings(env: NodeJS.ProcessEnv): Conf<StoredSettings> {
  const path = settingsPathOf(env);
  try {
    return new Conf<StoredSettings>({
      projectName: 'rmbg',
      cwd: dirname(path),
      // The file holds an API key: readable by its owner only.
      configFileMode: 0o600,
      accessPropertiesByDotNotation: false,
    });
  } catch (error) {
    throw unreadableSettings(error);
  }
}

export function writeUserSetting<K extends StoredSettingName>(
  name: K,
  value: StoredSettings[K],
  env: NodeJS.ProcessEnv = process.env,
): void {
  const store = openUserSettings(env);
  if (value === undefined) store.delete(name);
  else store.set(name, value);
}
