// The on-device engine's settings, built in one place for every caller: `rmbg remove --local`, the library's
// removeBackground() and `rmbg serve` / createServer(). Each passes what its user gave; the rest comes from
// the environment and the user settings file in the one precedence order of src/config.

import { RmbgError } from '../api/errors.js';
import { LIMITS } from '../api/limits.js';
import { resolveSetting } from '../config/load-config.js';
import { dataDirOf, SETTING_RULES } from '../config/setting-rules.js';
import { settingsPathOf } from '../config/user-settings.js';
import type { Device } from '../api/device.js';
import type { EngineOptions } from '../engine/index.js';
import { userModelsDirOf } from '../engine/model/user-models.js';
import { ENGINE_SETTINGS } from '../settings/index.js';
import { checkValue, type OptionsOf } from '../settings/setting.js';

const ENGINE_ROW_NAMES = Object.keys(ENGINE_SETTINGS) as Array<keyof typeof ENGINE_SETTINGS>;

/** The engine's rows of src/settings (model, device, threads, spin-wait, graph cache), plus what its callers add. */
export interface EngineSettings extends OptionsOf<typeof ENGINE_SETTINGS> {
  /** The data directory whose models/ holds the user's models (`rmbg models add`); else RMBG_DATA_DIR or the default. */
  dataDir?: string | undefined;
  warmUp?: boolean;
  /** A model run that has not answered after this long ends its worker (the server's processing timeout). */
  runTimeoutMs?: number;
}

/** The device asked for, wherever it was given, checked by its row; a wrong value names where it came from. */
export function resolveDevice(given: string | undefined, env: NodeJS.ProcessEnv = process.env): Device {
  const setting = resolveSetting('device', given, { env });
  const where = {
    flag: '`device`',
    env: SETTING_RULES.device.env,
    config: `'device' in ${settingsPathOf(env)}`,
    default: '`device`',
    unset: '`device`',
  }[setting.source];
  return checkValue(where, ENGINE_SETTINGS.device, setting.value) as Device;
}

/**
 * The engine's options: every row of settings/engine.ts by its name (model and device resolved from the flag,
 * the environment and the settings file), plus what the caller adds. A new engine row reaches the engine here.
 */
export function engineOptionsOf(settings: EngineSettings, env: NodeJS.ProcessEnv = process.env): EngineOptions {
  const rows = Object.fromEntries(
    ENGINE_ROW_NAMES.filter((name) => settings[name] !== undefined).map((name) => [name, settings[name]]),
  ) as OptionsOf<typeof ENGINE_SETTINGS>;
  return {
    ...rows,
    model: resolveSetting('model', settings.model, { env }).value,
    device: resolveDevice(settings.device, env),
    userModelsDir: userModelsDirOf(dataDirOf(settings.dataDir, env)),
    ...(settings.warmUp !== undefined && { warmUp: settings.warmUp }),
    // Every run has a limit: a hung GPU or kernel fails its photo instead of holding the caller for ever.
    runTimeoutMs: settings.runTimeoutMs ?? LIMITS.runTimeoutMs,
  };
}

/**
 * Which engine an instance may share: one per value of every engine row (the model by its weights' path) and of
 * the run time limit (the batch's runTimeoutMs, which the engine's worker applies).
 */
export function engineKeyOf(options: EngineOptions, modelPath: string): string {
  const rows = ENGINE_ROW_NAMES.map((name) => (name === 'model' ? modelPath : options[name]));
  return JSON.stringify([...rows, options.runTimeoutMs]);
}

/** Whether the engine row `name` is a switch that is on unless turned off. */
function defaultsOn(name: keyof typeof ENGINE_SETTINGS): boolean {
  const row = ENGINE_SETTINGS[name];
  return row.type === 'switch' && row.default === true;
}

/**
 * Through a server, the engine's settings cannot apply (the server runs its own model where it was started to):
 * any that was given is an error naming them, rather than a setting silently ignored.
 */
export function refuseEngineSettings(settings: OptionsOf<typeof ENGINE_SETTINGS>): void {
  const given = ENGINE_ROW_NAMES.filter(
    // A switch that is on unless turned off (graphCache, cleanEdges): only false was asked for.
    (name) => settings[name] !== undefined && !(defaultsOn(name) && settings[name] === true),
  );
  if (given.length === 0) return;
  const names = given.map((name) => `\`${name}\``).join(', ');
  throw new RmbgError(
    'usage_error',
    `${names} ${given.length > 1 ? 'apply' : 'applies'} on this computer only; the server at \`apiUrl\` runs its own model where it was started to`,
  );
}
