// Settings precedence (flag > env > user settings file > built-in default) against a real conf file in a temp dir.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import envPaths from 'env-paths';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { loadConfig, requireSetting, resolveSetting } from '../../../src/config/load-config.js';
import { writeUserSetting } from '../../../src/config/settings-writer.js';
import { readUserSettings } from '../../../src/config/user-settings.js';

let dir: string;
let env: NodeJS.ProcessEnv;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rmbg-config-'));
  env = { RMBG_CONFIG_DIR: dir };
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function expectUsageError(run: () => unknown, message: RegExp): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(RmbgError);
    expect((error as RmbgError).code).toBe('usage_error');
    expect((error as RmbgError).message).toMatch(message);
    return;
  }
  throw new Error('expected a usage_error');
}

describe('loadConfig precedence', () => {
  it('takes the flag over the environment over the settings file', () => {
    writeUserSetting('apiUrl', 'http://from-config', env);
    writeUserSetting('apiKey', 'key-config', env);
    const withAll = loadConfig(
      { apiUrl: 'http://from-flag', apiKey: 'key-flag' },
      { ...env, RMBG_API_URL: 'http://from-env', RMBG_API_KEY: 'key-env' },
    );
    expect(withAll.apiUrl).toEqual({ value: 'http://from-flag', source: 'flag' });
    expect(withAll.apiKey).toEqual({ value: 'key-flag', source: 'flag' });

    const withEnv = loadConfig({}, { ...env, RMBG_API_URL: 'http://from-env', RMBG_API_KEY: 'key-env' });
    expect(withEnv.apiUrl).toEqual({ value: 'http://from-env', source: 'env' });
    expect(withEnv.apiKey).toEqual({ value: 'key-env', source: 'env' });

    const fromFile = loadConfig({}, env);
    expect(fromFile.apiUrl).toEqual({ value: 'http://from-config', source: 'config' });
    expect(fromFile.apiKey).toEqual({ value: 'key-config', source: 'config' });
  });

  it('treats empty flags and empty variables as not given', () => {
    writeUserSetting('apiKey', 'key-config', env);
    expect(loadConfig({ apiKey: '' }, { ...env, RMBG_API_KEY: '' }).apiKey).toEqual({
      value: 'key-config',
      source: 'config',
    });
  });

  it('reports unset API settings, and the platform data dir as the built-in default', () => {
    const config = loadConfig({}, env);
    expect(config.apiUrl).toEqual({ value: undefined, source: 'unset' });
    expect(config.apiKey).toEqual({ value: undefined, source: 'unset' });
    expect(config.dataDir).toEqual({ value: envPaths('rmbg', { suffix: '' }).data, source: 'default' });
    expect(loadConfig({ dataDir: '/tmp/d1' }, { ...env, RMBG_DATA_DIR: '/tmp/d2' }).dataDir).toEqual({
      value: '/tmp/d1',
      source: 'flag',
    });
    expect(loadConfig({}, { ...env, RMBG_DATA_DIR: '/tmp/d2' }).dataDir).toEqual({ value: '/tmp/d2', source: 'env' });
  });

  it('resolveSetting reads the settings file named by RMBG_CONFIG_DIR', () => {
    writeUserSetting('apiUrl', 'http://stored', env);
    expect(resolveSetting('apiUrl', undefined, { env })).toEqual({ value: 'http://stored', source: 'config' });
    expect(resolveSetting('apiUrl', 'http://flag', { env })).toEqual({ value: 'http://flag', source: 'flag' });
  });
});

describe('settings file', () => {
  it('lives in RMBG_CONFIG_DIR, holds the key readable by its owner only', () => {
    writeUserSetting('apiKey', 'secret', env);
    const file = path.join(dir, 'config.json');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ apiKey: 'secret' });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadConfig({}, env).settingsPath).toBe(file);
    writeUserSetting('apiKey', undefined, env);
    expect(readUserSettings(env).settings).toEqual({});
  });

  it('returns validated default option fields', () => {
    writeUserSetting('defaults', { size: 'hd', format: 'png', crop: true }, env);
    expect(loadConfig({}, env).defaultFields).toEqual({ size: 'hd', format: 'png', crop: true });
  });

  it('rejects invalid defaults, wrong types and broken JSON with a message naming the file', () => {
    writeUserSetting('defaults', { size: 'huge' }, env);
    expectUsageError(
      () => loadConfig({}, env),
      /'defaults' in .*config\.json is invalid: size must be one of preview, small/,
    );

    writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ apiUrl: 42 }));
    expectUsageError(() => loadConfig({}, env), /setting 'apiUrl' in .*config\.json must be a string; got 42/);

    writeFileSync(path.join(dir, 'config.json'), '{ not json');
    expectUsageError(() => loadConfig({}, env), /cannot read the rmbg settings file.*fix or delete it/);
  });
});

describe('requireSetting', () => {
  it('names every way to give a missing setting', () => {
    const config = loadConfig({}, env);
    expectUsageError(
      () => requireSetting(config, 'apiKey'),
      /no API key given: pass --api-key or set RMBG_API_KEY, or 'apiKey' in .*config\.json/,
    );
    expect(requireSetting(loadConfig({ apiKey: 'k' }, env), 'apiKey')).toBe('k');
  });
});
