// `rmbg config` end to end: settings written by the CLI become defaults of `rmbg remove`, and typed
// flags still win over them; bad values are refused with exit 2 and change nothing. The quick model: this is
// about which options a run gets, not the cut.

import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { ensureBuilt, jsonLines, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { addQuickModel, QUICK_MODEL } from '../helpers/remove-local-files.js';

let settingsDir: string;
const withSettings: { configDir: string; env: Record<string, string> } = { configDir: '', env: {} };

beforeAll(async () => {
  ensureBuilt();
  settingsDir = tempDir('rmbg-settings-');
  withSettings.configDir = settingsDir;
  withSettings.env = await addQuickModel(tempDir('rmbg-data-'));
});
afterAll(removeTempDirs);

describe('rmbg config', () => {
  it('stores defaults that rmbg remove uses, with typed flags taking precedence', async () => {
    expect((await rmbg(['config', 'set', 'size', 'preview'], withSettings)).exitCode).toBe(0);
    expect((await rmbg(['config', 'set', 'format', 'webp'], withSettings)).exitCode).toBe(0);
    const refused = await rmbg(['config', 'set', 'size', 'huge'], withSettings);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('size must be one of preview, small, regular');

    const settingsFile = path.join(settingsDir, 'config.json');
    expect(JSON.parse(readFileSync(settingsFile, 'utf8'))).toEqual({ defaults: { size: 'preview', format: 'webp' } });
    expect(statSync(settingsFile).mode & 0o777).toBe(0o600);

    const input = tempDir();
    writeFileSync(path.join(input, 'photo.jpg'), await jpegPhoto(1200, 900));
    const out = tempDir();
    const byDefaults = await rmbg(['remove', input, '--local', '-o', out, ...QUICK_MODEL], withSettings);
    expect(byDefaults.exitCode).toBe(0);
    const [file] = jsonLines(byDefaults.stdout);
    expect(file).toMatchObject({ status: 'done', output: path.join(out, 'photo.webp') });
    const meta = await sharp(path.join(out, 'photo.webp')).metadata();
    expect(meta.format).toBe('webp');
    expect(meta.width! * meta.height!).toBeLessThanOrEqual(250_000);

    const typed = await rmbg(
      ['remove', input, '--local', '-o', out, '--format', 'png', '--size', 'medium', ...QUICK_MODEL],
      withSettings,
    );
    expect(typed.exitCode).toBe(0);
    const pngMeta = await sharp(path.join(out, 'photo.png')).metadata();
    expect([pngMeta.format, pngMeta.width, pngMeta.height]).toEqual(['png', 1200, 900]);

    expect((await rmbg(['config', 'unset', 'size'], withSettings)).exitCode).toBe(0);
    const shown = await rmbg(['config', 'get'], withSettings);
    expect(JSON.parse(shown.stdout)).toEqual({ format: 'webp' });
  });
});

describe('RMBG_MODEL', () => {
  it('is the model rmbg doctor checks: a model that cannot load exits 1 and says why; one that can, 0', async () => {
    const doctor = async (model: string) => {
      const result = await rmbg(['doctor', '--json'], {
        ...withSettings,
        env: { ...withSettings.env, RMBG_MODEL: model },
      });
      return { exitCode: result.exitCode, model: JSON.parse(result.stdout).model };
    };
    const missing = path.join(settingsDir, 'absent.onnx');
    expect(await doctor(missing)).toEqual({
      exitCode: 1,
      model: { value: missing, source: 'env', problem: `model file ${missing} does not exist` },
    });
    expect(await doctor('quick')).toEqual({ exitCode: 0, model: { value: 'quick', source: 'env' } });
  });
});
