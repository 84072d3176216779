// `rmbg config set|get|unset|path`: the user settings file (API URL, API key, default image options).
// Option names are the API's field names (size, format, crop, bg_color), validated by the one schema.

import { RmbgError } from '../../api/errors.js';
import { OPTION_FIELDS, parseRemoveOptions } from '../../api/options.js';
import { readUserSettings } from '../../config/user-settings.js';
import { writeUserSetting } from '../../config/settings-writer.js';
import { parseDevice } from '../../api/device.js';
import { EXIT } from '../exit-codes.js';
import { readSecretFromStdin } from '../read-secret.js';

const CONNECTION_SETTINGS = { 'api-url': 'apiUrl', 'api-key': 'apiKey', device: 'device' } as const;
type ConnectionName = keyof typeof CONNECTION_SETTINGS;
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
    const view = {
      'api-url': settings.apiUrl,
      'api-key': settings.apiKey ? `${settings.apiKey.slice(0, 9)}…` : undefined,
      device: settings.device,
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
    if (action === 'set' && name === 'device') parseDevice(value);
    writeUserSetting(CONNECTION_SETTINGS[name as ConnectionName], action === 'set' ? value : undefined);
  } else {
    const defaults = { ...settings.defaults };
    if (action === 'set') defaults[name] = value as string;
    else delete defaults[name];
    try {
      parseRemoveOptions(defaults);
    } catch (error) {
      throw new RmbgError('usage_error', (error as Error).message);
    }
    writeUserSetting('defaults', Object.keys(defaults).length ? defaults : undefined);
  }
  process.stdout.write(`rmbg: ${action === 'set' ? `set ${name}` : `removed ${name}`} in ${path}\n`);
  return EXIT.ok;
}
