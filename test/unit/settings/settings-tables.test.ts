// Every setting is one row of src/settings: the commands' flags, the library's options and checks, and the
// docs' tables all come from the rows, and fail here when one of them disagrees.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { OPTION_FIELDS } from '../../../src/api/options.js';
import { buildProgram } from '../../../src/cli/program.js';
import { inFlagWords, settingFlags } from '../../../src/cli/settings-flags.js';
import { engineOptionsOf } from '../../../src/library/engine-settings.js';
import { parseImageOptions, remoteTarget } from '../../../src/library/remove-options.js';
import { STORE_URL_ENV } from '../../../src/store/open-store.js';
import { DOC_TABLES, TABLES_BY_FILE, tablesIn, withCurrentTables } from '../../../src/settings/docs-rows.js';
import { CALL_TABLE, REMOVE_TABLE, SERVE_TABLE } from '../../../src/settings/index.js';
import { checkOptions, flagOf, type SettingsTable } from '../../../src/settings/setting.js';
import { ROOT } from '../../helpers/cli.js';

function command(name: string): Command {
  const found = buildProgram().commands.find((each) => each.name() === name);
  if (!found) throw new Error(`no command ${name}`);
  return found;
}

const flagsOf = (table: SettingsTable) => Object.entries(table).map(([name, row]) => flagOf(name, row));
const imageFlags = OPTION_FIELDS.filter((field) => field.kind !== 'enum' || field.values.length > 1).map(
  (field) => `--${field.name.replace(/_/g, '-')}`,
);

/** What commander makes of `args` for `name`, as the command's run() reads it; or the usage error it prints. */
function parse(name: string, args: string[]): { flags?: Record<string, unknown>; error?: string } {
  const program = buildProgram();
  let error = '';
  program.exitOverride().configureOutput({
    writeErr: (text) => {
      error += text;
    },
    writeOut: () => undefined,
  });
  const sub = program.commands.find((each) => each.name() === name) as Command;
  sub.exitOverride().configureOutput({
    writeErr: (text) => {
      error += text;
    },
    writeOut: () => undefined,
  });
  sub.action(() => undefined);
  try {
    program.parse(['node', 'rmbg', name, ...args]);
  } catch {
    return { error };
  }
  return { flags: settingFlags(sub, name === 'serve' ? SERVE_TABLE : REMOVE_TABLE) };
}

describe('the settings tables', () => {
  it("are the flags of rmbg serve and rmbg remove (besides the image options' and --help)", () => {
    const longs = (name: string) => command(name).options.map((option) => option.long);
    expect(longs('serve').sort()).toEqual(flagsOf(SERVE_TABLE).sort());
    expect(longs('remove').sort()).toEqual([...flagsOf(REMOVE_TABLE), ...imageFlags].sort());
  });

  it('give each flag its row: units, bounds and names as the rows say', () => {
    expect(parse('remove', ['x.jpg', '-o', 'cutouts', '--timeout', '2', '--keep-gps', '--threads', '3']).flags).toEqual(
      expect.objectContaining({ outDir: 'cutouts', timeoutMs: 2000, keepGps: true, threads: 3 }),
    );
    expect(parse('remove', ['x.jpg']).flags).toEqual(
      expect.objectContaining({ outDir: 'rmbg-out', timeoutMs: 180_000 }),
    );
    expect(parse('serve', ['--no-ui', '--no-graph-cache', '--max-queue', '0']).flags).toEqual(
      expect.objectContaining({ ui: false, graphCache: false, maxQueue: 0, port: 5000, host: '127.0.0.1' }),
    );
    expect(parse('serve', ['--port', '65536']).error).toContain('--port must be a whole number from 0 to 65535; got');
    expect(parse('serve', ['--max-queue', '1e3']).error).toContain(
      "--max-queue must be a whole number from 0; got '1e3'",
    );
    expect(parse('remove', ['x.jpg', '--timeout', '0']).error).toContain(
      '--timeout must be a whole number from 1 to 2147483;',
    );
    expect(parse('serve', ['--device', 'tpu']).error).toContain(
      "argument 'tpu' is invalid. Allowed choices are auto, gpu, cpu",
    );
  });

  it("are createServer()'s options: defaults filled, a bad value named with its bounds, an unknown name refused", () => {
    expect(checkOptions(SERVE_TABLE, { port: 0, device: undefined })).toEqual(
      expect.objectContaining({ port: 0, maxQueue: 16, processingTimeout: 120, ui: true, graphCache: true }),
    );
    expect(() => checkOptions(SERVE_TABLE, { leaseTime: 86_401 })).toThrow(
      'leaseTime must be a whole number from 1 to 86400; got 86401',
    );
    // A Node timer longer than 2^31 - 1 ms fires at once: the timeouts stop below it.
    expect(() => checkOptions(SERVE_TABLE, { processingTimeout: 2_147_484 })).toThrow('from 1 to 2147483;');
    expect(SERVE_TABLE.store.env).toBe(STORE_URL_ENV);
    expect(() => checkOptions(SERVE_TABLE, { ui: 'no' })).toThrow('ui must be true or false; got "no"');
    expect(() => checkOptions(SERVE_TABLE, { device: 'tpu' })).toThrow(
      'device must be one of auto, gpu, cpu; got "tpu"',
    );
    expect(() => checkOptions(SERVE_TABLE, { maxQeue: 1 })).toThrow(
      `unknown option 'maxQeue'; allowed options: ${Object.keys(SERVE_TABLE).join(', ')}`,
    );
  });

  it("are removeBackground()'s run options, each checked by its row", () => {
    for (const name of Object.keys(CALL_TABLE)) expect(() => parseImageOptions({ [name]: undefined })).not.toThrow();
    expect(() => parseImageOptions({ threads: 0 })).toThrow('threads must be a whole number from 1 to 1024; got 0');
    expect(() => parseImageOptions({ keepGps: 'yes' })).toThrow('keepGps must be true or false; got "yes"');
    // The CLI's own flags are not options of the library.
    expect(() => parseImageOptions({ dryRun: true })).toThrow("unknown option 'dryRun'");
    // An option is a number: text that spells one would reach a timer or a pool as a string.
    expect(() => parseImageOptions({ timeoutMs: '5000' })).toThrow(
      "timeoutMs must be a number, not a string; got '5000'",
    );
    expect(() => parseImageOptions({ concurrency: '4' }, REMOVE_TABLE)).toThrow('concurrency must be a number');
    // Through a server, the engine's settings would be silently ignored: refused, named.
    const remote = { apiUrl: 'http://127.0.0.1:1', apiKey: 'k' };
    expect(() => remoteTarget({ ...remote, threads: 2, graphCache: false, cleanEdges: false })).toThrow(
      '`threads`, `graphCache`, `cleanEdges` apply on this computer only; the server at `apiUrl` runs its own model',
    );
    expect(remoteTarget({ ...remote, graphCache: true, cleanEdges: true })).toEqual(
      expect.objectContaining({ apiUrl: remote.apiUrl }),
    );
  });

  it('give the engine its environment variables when the caller gives no value: RMBG_MODEL, RMBG_DEVICE', () => {
    const env = { RMBG_MODEL: '/models/mine.onnx', RMBG_DEVICE: 'cpu', RMBG_DATA_DIR: '/tmp/rmbg-none' };
    expect(engineOptionsOf({}, env)).toEqual(expect.objectContaining({ model: '/models/mine.onnx', device: 'cpu' }));
    expect(engineOptionsOf({ model: 'isnet-medium', threads: 3, graphCache: false }, env)).toEqual(
      expect.objectContaining({ model: 'isnet-medium', threads: 3, graphCache: false }),
    );
    expect(() => engineOptionsOf({}, { ...env, RMBG_DEVICE: 'tpu' })).toThrow(
      'RMBG_DEVICE must be one of auto, gpu, cpu',
    );
  });

  it('are the tables of docs/cli.md, docs/api.md and docs/library.md, as `npm run docs` writes them', () => {
    // every generated table is in one page
    expect(Object.values(TABLES_BY_FILE).flat().sort()).toEqual(Object.keys(DOC_TABLES).sort());
    for (const [file, names] of Object.entries(TABLES_BY_FILE)) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      expect(tablesIn(text), file).toEqual(names);
      expect(text, `${file} is out of date: run npm run docs`).toBe(withCurrentTables(text));
    }
  });
});

describe("the library's messages in the CLI's words", () => {
  it('name a setting as `option`, which the CLI shows as its flag', () => {
    const message = 'cannot listen on 127.0.0.1:5000 (EADDRINUSE); choose another `port` or `host`';
    expect(inFlagWords(message, [SERVE_TABLE])).toBe(
      'cannot listen on 127.0.0.1:5000 (EADDRINUSE); choose another --port or --host',
    );
    expect(inFlagWords('`outDir` is taken; `ui` off; `rmbg models add` as is', [SERVE_TABLE, REMOVE_TABLE])).toBe(
      '--output is taken; --no-ui off; `rmbg models add` as is',
    );
  });
});
