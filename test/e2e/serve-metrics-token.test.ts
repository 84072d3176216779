// `rmbg serve` takes its /metrics token from a file or from RMBG_METRICS_TOKEN, so it is not in the process's
// arguments (which `ps` shows every user of the machine): the real CLI, its /metrics, its /proc cmdline. And
// --trust-proxy and --max-auth-failures reach the real server: this test is the proxy on 127.0.0.1, sending
// X-Forwarded-For (what the throttle does with it is tested in test/unit/server/client-address.test.ts).
// A tiny identity model: nothing here runs the model.

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createKey,
  errorCode,
  rmbg,
  startIdentityServe,
  tempDataDir,
  type ServeProcess,
} from '../helpers/serve-harness.js';

const FILE_TOKEN = 'file-token-7f3a91c2e5';
const ENV_TOKEN = 'env-token-4b8d20a6f1';

let dataDir: string;
/** --metrics-token-file, --trust-proxy 127.0.0.1,::1, --max-auth-failures 3. */
let fromFile: ServeProcess;
/** RMBG_METRICS_TOKEN. */
let fromEnv: ServeProcess;

beforeAll(async () => {
  dataDir = tempDataDir();
  const tokenFile = join(dataDir, 'metrics-token');
  writeFileSync(tokenFile, `${FILE_TOKEN}\n`, { mode: 0o600 });
  [fromFile, fromEnv] = await Promise.all([
    startIdentityServe(dataDir, [
      '--metrics-token-file',
      tokenFile,
      '--trust-proxy',
      '127.0.0.1,::1',
      '--max-auth-failures',
      '3',
    ]),
    startIdentityServe(tempDataDir(), [], { RMBG_METRICS_TOKEN: ENV_TOKEN }),
  ]);
});

afterAll(async () => {
  await Promise.all([fromFile?.stop(), fromEnv?.stop()]);
  for (const dir of [fromFile?.dataDir, fromEnv?.dataDir, dataDir])
    if (dir) rmSync(dir, { recursive: true, force: true });
});

/** /metrics from this machine: with the token, without one, with a wrong one. */
async function scrape(url: string, token: string) {
  const statusWith = async (authorization?: string) =>
    (await call(`${url}/metrics`, authorization ? { headers: { authorization } } : {})).status;
  return [await statusWith(`Bearer ${token}`), await statusWith(), await statusWith(`Bearer ${token}x`)];
}

function argumentsOf(pid: number | undefined): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
}

describe('rmbg serve --metrics-token-file and RMBG_METRICS_TOKEN', () => {
  it('a token from a file guards /metrics (loopback included) and is not in the arguments', async () => {
    expect(await scrape(fromFile.url, FILE_TOKEN)).toEqual([200, 404, 404]);
    expect(argumentsOf(fromFile.pid)).toContain('--metrics-token-file');
    expect(argumentsOf(fromFile.pid)).not.toContain(FILE_TOKEN);
  });

  it('a token from RMBG_METRICS_TOKEN guards /metrics and is not in the arguments', async () => {
    expect(await scrape(fromEnv.url, ENV_TOKEN)).toEqual([200, 404, 404]);
    expect(argumentsOf(fromEnv.pid)).not.toContain(ENV_TOKEN);
  });

  it('refuses to start, with a usage error, on an empty token file or a bad --trust-proxy', async () => {
    // A data dir of no running server: the refusal is for the flag, not for a server already there.
    const unused = tempDataDir();
    const empty = join(unused, 'empty');
    writeFileSync(empty, '\n');
    const noToken = await rmbg(['serve', '--port', '0', '--data-dir', unused, '--metrics-token-file', empty]);
    expect([noToken.exitCode, noToken.stderr]).toEqual([
      2,
      expect.stringMatching(/--metrics-token-file .*empty: the metrics token is empty/),
    ]);
    const badProxy = await rmbg(['serve', '--port', '0', '--data-dir', unused, '--trust-proxy', '10.0.0.0/40']);
    expect([badProxy.exitCode, badProxy.stderr]).toEqual([
      2,
      expect.stringMatching(/--trust-proxy: '10.0.0.0\/40' is not an IP address or a CIDR block/),
    ]);
    rmSync(unused, { recursive: true, force: true });
  });
});

describe('rmbg serve --trust-proxy', () => {
  it('a flood of bad keys through the trusted proxy throttles its sender only; valid keys are served', async () => {
    const { key } = await createKey(dataDir, 5);
    const account = (apiKey: string, client: string) =>
      call(`${fromFile.url}/v1.0/account`, { headers: { 'X-API-Key': apiKey, 'X-Forwarded-For': client } });
    // How many of 12 at once are refused depends on their timing; once they are all counted, the next one is.
    await Promise.all(Array.from({ length: 12 }, (_, i) => account(`rmbg_flood-${i}`, '203.0.113.7')));
    expect((await account('rmbg_flood', '203.0.113.7')).status).toBe(429);
    // Another client of the same proxy: its own count, and its valid key served.
    const typo = await account('rmbg_typo', '198.51.100.20');
    expect([typo.status, errorCode(typo)]).toEqual([403, 'invalid_api_key']);
    expect((await account(key, '198.51.100.20')).status).toBe(200);
    // The flooding client's own valid key is served too.
    expect((await account(key, '203.0.113.7')).status).toBe(200);
  });
});
