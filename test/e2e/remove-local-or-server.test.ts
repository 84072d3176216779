// Local by default: `rmbg remove photo.jpg` with no API URL anywhere runs on this computer and says so once
// on stderr; an API URL from a flag, the environment or the settings file still selects the server, and
// --local still wins over all of them. Every run has its own empty settings folder and HOME. The first run is
// the one run of the CLI with its built-in model; the other local runs use the quick model.

import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { ensureBuilt, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { addQuickModel, expectCutout, QUICK_MODEL, writeTree } from '../helpers/remove-local-files.js';

const NOTE = 'no API URL configured: removing backgrounds on this computer';
let photo: Buffer;
let server: Server;
let apiUrl: string;
let quick: Record<string, string>;
const requests: string[] = [];

beforeAll(async () => {
  ensureBuilt();
  photo = await jpegPhoto(200, 150);
  quick = await addQuickModel(tempDir('rmbg-data-'));
  // A stand-in API that refuses every key: enough to see whether a run went to the server.
  server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    request.resume();
    response
      .writeHead(403, { 'Content-Type': 'application/json' })
      .end(JSON.stringify({ errors: [{ title: 'Invalid API key', code: 'invalid_api_key' }] }));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((closed) => server.close(closed));
  removeTempDirs();
});

/** A working folder with photo.jpg, its own settings folder and HOME: nothing of the user's leaks in. */
function fresh() {
  const work = tempDir();
  writeTree(work, { 'photo.jpg': photo });
  const env = {
    RMBG_CONFIG_DIR: path.join(work, '.config'),
    HOME: work,
    XDG_CONFIG_HOME: path.join(work, '.config-xdg'),
  };
  return {
    work,
    env,
    run: (args: string[], extra: Record<string, string> = {}) =>
      rmbg(['remove', 'photo.jpg', '--size', 'preview', ...args], { cwd: work, env: { ...env, ...extra } }),
  };
}

const count = (text: string, part: string) => text.split(part).length - 1;

describe('rmbg remove with no API URL configured', () => {
  it('runs on this computer, writes the cutout and says so once on stderr', async () => {
    const { work, run } = fresh();
    const result = await run([]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(count(result.stderr, NOTE)).toBe(1);
    expect(result.stderr).toContain('--api-url');
    await expectCutout(path.join(work, 'rmbg-out', 'photo.png'), 200, 150);
    expect(JSON.parse(result.stdout.trim().split('\n').at(-1) as string)).toMatchObject({
      summary: true,
      done: 1,
      failed: 0,
    });
  });

  it('says nothing about it when --local was asked for', async () => {
    const { work, run } = fresh();
    const result = await run(['--local', ...QUICK_MODEL], quick);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).not.toContain(NOTE);
    expect(existsSync(path.join(work, 'rmbg-out', 'photo.png'))).toBe(true);
  });
});

describe('an API URL from anywhere selects the server; --local still wins', () => {
  const sources: Array<
    [string, (setup: ReturnType<typeof fresh>) => Promise<{ args: string[]; env: Record<string, string> }>]
  > = [
    ['the --api-url flag', async () => ({ args: ['--api-url', apiUrl], env: {} })],
    ['RMBG_API_URL', async () => ({ args: [], env: { RMBG_API_URL: apiUrl } })],
    [
      'the settings file',
      async ({ work, env }) => {
        const set = await rmbg(['config', 'set', 'api-url', apiUrl], { cwd: work, env });
        expect(set.exitCode, set.stderr).toBe(0);
        return { args: [], env: {} };
      },
    ],
  ];

  it.each(sources)(
    '%s: the photo goes to the server (which refuses the key), nothing local',
    async (_name, configure) => {
      const setup = fresh();
      const { args, env } = await configure(setup);
      const before = requests.length;
      const result = await setup.run(['--api-key', 'rmbg_refused', ...args], env);
      expect(result.exitCode).toBe(1);
      expect(result.stderr).not.toContain(NOTE);
      expect(requests.slice(before)).toEqual(['POST /v1.0/removebg']);
      expect(existsSync(path.join(setup.work, 'rmbg-out', 'photo.png'))).toBe(false);
    },
  );

  it('--local with RMBG_API_URL set runs on this computer and sends nothing', async () => {
    const { work, run } = fresh();
    const before = requests.length;
    const result = await run(['--local', '--api-key', 'rmbg_unused', ...QUICK_MODEL], {
      RMBG_API_URL: apiUrl,
      ...quick,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(requests.length).toBe(before);
    await expectCutout(path.join(work, 'rmbg-out', 'photo.png'), 200, 150);
  });
});
