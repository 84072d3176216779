// `rmbg config set|get|unset|path`: the user settings file (API URL, API key, default image options).
// Option names are the API's field names (size, format, crop, bg_color), validated by the one schema.

import { RmbgError, messageOf } from '../../api/errors.js';
import { OPTION_FIELDS, parseRemoveOptions } from '../../api/options.js';
import { readUserSettings } from '../../config/user-settings.js';
import { writeUserSetting } from '../../config/settings-writer.js';
import { SETTING_ROWS, SETTING_RULES, STORED_NAMES, type StoredName } from '../../config/setting-rules.js';
import { checkValue } from '../../settings/setting.js';
import { EXIT } from '../exit-codes.js';
import { readSecretFromStdin } from '../read-secret.js';

/** The rows the settings file may hold (setting-rules.ts), by their flags' names: api-url, api-key, device. */
const CONNECTION_SETTINGS: Readonly<Record<string, StoredName>> = Object.fromEntries(
  STORED_NAMES.map((name) => [SETTING_RULES[name].flag.replace(/^--/, ''), name]),
);
// type, type_level and channels accept one value that changes nothing: not worth a setting.
const OPTION_NAMES: readonly string[] = OPTION_FIELDS.filter(
  (field) => field.kind !== 'enum' || field.values.length > 1,
).map((field) => field.name);

function known(name: string): 'connection' | 'option' {
  if (Object.hasOwn(CONNECTION_SETTINGS, name)) return 'connection';
  if (OPTION_NAMES.includes(name)) return 'option';
  throw new RmbgError(
    'usage_error',
    `unknown setting '${name}'; settings: ${[...Object.keys(CONNECTION_SETTINGS), ...OPTION_NAMES].join(', ')}`,
  );
}

export async function run(_opts: Record<string, unknown>, args: string[]): Promise<number> {
  const [action, name] = args as [string, string | undefined];
  let value = args[2];
  const { settings, path } = readUserSettings();
  if (action === 'path') {
    process.stdout.write(`${path}\n`);
    return EXIT.ok;
  }
  if (action === 'get') {
    // The key is shown by its prefix only: enough to tell keys apart, not to use one.
    const shown = (name: StoredName) =>
      name === 'apiKey' && settings.apiKey ? `${settings.apiKey.slice(0, 9)}…` : settings[name];
    const view = {
      ...Object.fromEntries(Object.entries(CONNECTION_SETTINGS).map(([flag, name]) => [flag, shown(name)])),
      ...settings.defaults,
    };
    if (name) {
      known(name);
      process.stdout.write(`${(view as Record<string, unknown>)[name] ?? ''}\n`);
    } else {
      process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
    }
    return EXIT.ok;
  }
  if (action !== 'set' && action !== 'unset')
    throw new RmbgError('usage_error', `unknown action '${action}'; use set, get, unset or path`);
  if (!name) throw new RmbgError('usage_error', `rmbg config ${action} needs a setting name`);
  const kind = known(name);
  // The key is read from stdin when not given: on the command line it would show in `ps` and the shell's history.
  if (action === 'set' && value === undefined && name === 'api-key') value = await readSecretFromStdin('API key');
  if (action === 'set' && value === undefined)
    throw new RmbgError('usage_error', `rmbg config set ${name} needs a value`);
  if (kind === 'connection') {
    const setting = CONNECTION_SETTINGS[name] as StoredName;
    // Checked by its row, as the flag and the option are (the device's choices).
    if (action === 'set') checkValue(name, SETTING_ROWS[setting], value);
    writeUserSetting(setting, action === 'set' ? value : undefined);
  } else {
    const defaults = { ...settings.defaults };
    if (action === 'set') defaults[name] = value as string;
    else delete defaults[name];
    try {
      parseRemoveOptions(defaults, undefined, 'local');
    } catch (error) {
      throw new RmbgError('usage_error', messageOf(error));
    }
    writeUserSetting('defaults', Object.keys(defaults).length ? defaults : undefined);
  }
  process.stdout.write(`rmbg: ${action === 'set' ? `set ${name}` : `removed ${name}`} in ${path}\n`);
  return EXIT.ok;
}
