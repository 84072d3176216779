// Every row of the settings tables reaches the code that uses it: each is set to a value other than its default,
// and the started server (its service, its app, its engine) or the batch (its start event, or for the CLI's own
// flags what `rmbg remove` does) shows that value in force. A row added without a consumer fails here, named.

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer as listen } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keyEnd } from '../../../src/batch/remote-remover.js';
import type { BatchSettings } from '../../../src/batch/batch-events.js';
import { EXIT } from '../../../src/cli/exit-codes.js';
import { startLocalService } from '../../../src/library/create-server.js';
import { engineKeyOf, engineOptionsOf } from '../../../src/library/engine-settings.js';
import { createRmbg, type RemoveBackgroundsOptions } from '../../../src/library/rmbg.js';
import { ENGINE_SETTINGS, REMOVE_TABLE, SERVE_TABLE } from '../../../src/settings/index.js';
import { settingsFor, type SettingRow } from '../../../src/settings/setting.js';
import { jsonLines, removeTempDirs, rmbg, tempDir } from '../../helpers/cli.js';
import { warmKeyModel } from '../../helpers/fast-models.js';
import { jpegPhoto } from '../../helpers/hostile-images.js';

afterAll(removeTempDirs);

/** A value other than the row's default, within its bounds; text rows get theirs from the test. */
function otherThanDefault(name: string, row: SettingRow, text: Record<string, unknown>): unknown {
  if (Object.hasOwn(text, name)) return text[name];
  switch (row.type) {
    case 'whole': {
      const base = row.default ?? row.min;
      return base + 1 <= (row.max ?? Number.POSITIVE_INFINITY) ? base + 1 : base - 1;
    }
    case 'fraction':
      return (row.default ?? 0) === 0.25 ? 0.75 : 0.25;
    case 'switch':
      return !(row.default ?? false);
    case 'choice':
      // The last choice that is not the default: the device's is `cpu`, which every machine has.
      return row.choices.filter((choice) => choice !== row.default).at(-1);
    default:
      throw new Error(`row ${name} (${row.type}) needs a value in this test`);
  }
}

/** A port nobody listens on now (the row's default, 5000, may be taken). */
async function freePort(): Promise<number> {
  const probe = listen();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('every row of rmbg serve and createServer()', () => {
  it('reaches the part that uses it: the service, the app, the engine or the server itself', async () => {
    const token = 'token-from-a-file';
    const tokenFile = path.join(tempDir(), 'metrics-token');
    writeFileSync(tokenFile, `${token}\n`);
    const storeFile = path.join(tempDir(), 'elsewhere.sqlite');
    const text = {
      // Loopback, but not the default address.
      host: '127.0.0.2',
      port: await freePort(),
      dataDir: tempDir(),
      store: `sqlite:${storeFile}`,
      model: warmKeyModel(),
      metricsTokenFile: tokenFile,
      trustProxy: ['10.1.2.3'],
    };
    // metricsToken and metricsTokenFile exclude each other: the token is the second start's.
    const starts = [
      Object.fromEntries(
        Object.entries(SERVE_TABLE)
          .filter(([name]) => name !== 'metricsToken')
          .map(([name, row]) => [name, otherThanDefault(name, row, text)]),
      ),
      { port: 0, dataDir: tempDir(), model: text.model, metricsToken: 'token-given' },
    ];
    // What each asked value becomes in force: the service's and the app's rows by their names, seconds as
    // milliseconds; the store by its path; the token file by its token.
    const inForceOf = (asked: Record<string, unknown>): Record<string, unknown> => ({
      ...asked,
      ...settingsFor(SERVE_TABLE, 'service', asked),
      ...settingsFor(SERVE_TABLE, 'app', asked),
      ...(asked.store !== undefined && { store: storeFile }),
      ...(asked.metricsTokenFile !== undefined && { metricsToken: token }),
    });
    const checked = new Set<string>();
    for (const asked of starts) {
      const server = await startLocalService(asked);
      try {
        const inForce = server.settings();
        const expected = inForceOf(asked);
        for (const name of Object.keys(asked)) {
          if (name === 'port' && asked.port === 0) continue;
          const row = SERVE_TABLE[name as keyof typeof SERVE_TABLE];
          // A row in seconds is in force as name + Ms; the token file as the token it holds.
          const key =
            name === 'metricsTokenFile'
              ? 'metricsToken'
              : row.type === 'whole' && 'unit' in row && row.unit === 'seconds'
                ? `${name}Ms`
                : name;
          expect(inForce[key], `${name} in force`).toEqual(expected[key]);
          checked.add(name);
        }
      } finally {
        await server.close();
      }
    }
    expect([...checked].sort()).toEqual(Object.keys(SERVE_TABLE).sort());
  });
});

describe('every engine row', () => {
  it("reaches the engine's options and the engine pool's key: another value, another engine", () => {
    // No settings file and no RMBG_* variable: each row's value is the one given here.
    const env = { RMBG_CONFIG_DIR: tempDir(), RMBG_DATA_DIR: tempDir() };
    const keyOf = (options: ReturnType<typeof engineOptionsOf>) => engineKeyOf(options, String(options.model));
    const defaults = engineOptionsOf({}, env);
    for (const [name, row] of Object.entries(ENGINE_SETTINGS)) {
      const value = otherThanDefault(name, row, { model: '/models/another.onnx' });
      const options = engineOptionsOf({ [name]: value }, env);
      expect(options[name as keyof typeof options], `${name} in the engine's options`).toEqual(value);
      expect(keyOf(options), `${name} in the pool's key`).not.toBe(keyOf(defaults));
    }
    // The batch's run time limit is applied by the engine's worker: another limit, another engine.
    expect(keyOf(engineOptionsOf({ runTimeoutMs: 5000 }, env))).not.toBe(keyOf(defaults));
  });
});

/** The settings a batch of removeBackgrounds() reports in force (its start event), and how many inputs it found. */
async function batchStart(
  inputs: string,
  /** RemoveBackgroundsOptions, built from the table's rows. */
  options: object,
): Promise<{ total: number; settings: BatchSettings }> {
  const rmbgInstance = createRmbg();
  try {
    // Leaving the loop at the first event ends the batch (and the watch): only its settings are wanted here.
    for await (const event of rmbgInstance.removeBackgrounds(inputs, options as RemoveBackgroundsOptions))
      if (event.type === 'start') return event;
    throw new Error('the batch ended without a start event');
  } finally {
    await rmbgInstance.close();
  }
}

describe('every row of rmbg remove and removeBackgrounds()', () => {
  const libraryRows = Object.entries(REMOVE_TABLE).filter(([, row]) => !('cliOnly' in row));
  const remoteRows = ['apiUrl', 'apiKey', 'timeoutMs'];

  it("reaches the batch or its remover: each in force in the batch's start event", async () => {
    // The photo is in a subfolder: found only when `recursive` is in force.
    const inputs = tempDir();
    mkdirSync(path.join(inputs, 'sub'));
    writeFileSync(path.join(inputs, 'sub', 'photo.jpg'), await jpegPhoto(64, 48));
    const text = {
      outDir: tempDir(),
      model: warmKeyModel(),
      apiUrl: 'http://127.0.0.1:9',
      apiKey: 'rmbg_a-key-of-this-test',
    };
    const asked = (names: string[]) =>
      Object.fromEntries(
        libraryRows
          .filter(([name]) => names.includes(name))
          .map(([name, row]) => [name, otherThanDefault(name, row, text)]),
      );
    // Through a server the engine's rows are refused, so they and the server's rows take a batch each; both take
    // the outputs' folder, which the library requires.
    const local = asked(libraryRows.map(([name]) => name).filter((name) => !remoteRows.includes(name)));
    const remote = asked([...remoteRows, 'outDir']);
    // What each asked value becomes in force: the outputs' folder absolute, the key by its end only.
    const inForceOf = (options: Record<string, unknown>): Record<string, unknown> => ({
      ...options,
      outDir: path.resolve(String(options.outDir)),
      ...(options.apiKey !== undefined && { apiKey: keyEnd(String(options.apiKey)) }),
    });
    const checked = new Set<string>();
    for (const options of [local, remote]) {
      const start = await batchStart(inputs, options);
      const expected = inForceOf(options);
      for (const name of Object.keys(options)) {
        expect(start.settings[name], `${name} in force`).toEqual(expected[name]);
        checked.add(name);
      }
      if (options === local) expect(start.total, 'the photo in a subfolder, found by `recursive`').toBe(1);
    }
    expect([...checked].sort()).toEqual(libraryRows.map(([name]) => name).sort());
  });

  it("and every flag of rmbg remove's own reaches the command", async () => {
    const inputs = tempDir();
    writeFileSync(path.join(inputs, 'photo.jpg'), await jpegPhoto(64, 48));
    // A server is configured: only `--local` makes the batch local. Nothing here sends a request.
    const env = { RMBG_API_URL: 'http://127.0.0.1:9', RMBG_API_KEY: 'rmbg_a-key-of-this-test' };
    const checked: string[] = [];

    const dryRunOut = path.join(tempDir(), 'out');
    const dryRun = await rmbg(['remove', inputs, '-o', dryRunOut, '--local', '--dry-run', '--json'], { env });
    expect(dryRun.exitCode, dryRun.stderr).toBe(EXIT.ok);
    // --json: the plan in JSON lines; --local: on this computer, no credits; --dry-run: nothing processed.
    expect(jsonLines(dryRun.stdout).at(-1)).toMatchObject({ summary: true, dryRun: true, toSend: 1, credits: 0 });
    expect(existsSync(dryRunOut), '--dry-run wrote no output folder').toBe(false);
    checked.push('json', 'local', 'dryRun');

    const confirmOut = path.join(tempDir(), 'out');
    const confirm = await rmbg(['remove', inputs, '-o', confirmOut, '--confirm-over', '0'], { env, stdin: 'ignore' });
    // One credit is over 0, and there is no terminal to ask: refused before anything is sent.
    expect(confirm.exitCode).toBe(EXIT.failed);
    expect(confirm.stderr).toContain('over --confirm-over 0');
    expect(existsSync(confirmOut), 'nothing was written').toBe(false);
    checked.push('confirmOver');

    const cliOnlyRows = Object.entries(REMOVE_TABLE).filter(([, row]) => 'cliOnly' in row);
    expect(checked.sort()).toEqual(cliOnlyRows.map(([name]) => name).sort());
  });
});
