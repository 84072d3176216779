// `rmbg serve` takes its /metrics token from a file or from RMBG_METRICS_TOKEN, so it is not in the process's
// arguments (which `ps` shows every user of the machine): the real CLI, its /metrics, its /proc cmdline. And
// --trust-proxy on the real server: this test is the proxy on 127.0.0.1, sending X-Forwarded-For.

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { call, createKey, errorCode, rmbg, startServe, tempDataDir, type ServeProcess } from './serve-harness.js';

let server: ServeProcess | undefined;
let dataDir: string | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
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
    dataDir = tempDataDir();
    const token = 'file-token-7f3a91c2e5';
    const path = join(dataDir, 'metrics-token');
    writeFileSync(path, `${token}\n`, { mode: 0o600 });
    server = await startServe(dataDir, ['--metrics-token-file', path]);
    expect(await scrape(server.url, token)).toEqual([200, 404, 404]);
    expect(argumentsOf(server.child.pid)).toContain('--metrics-token-file');
    expect(argumentsOf(server.child.pid)).not.toContain(token);
  });

  it('a token from RMBG_METRICS_TOKEN guards /metrics and is not in the arguments', async () => {
    dataDir = tempDataDir();
    const token = 'env-token-4b8d20a6f1';
    server = await startServe(dataDir, [], { RMBG_METRICS_TOKEN: token });
    expect(await scrape(server.url, token)).toEqual([200, 404, 404]);
    expect(argumentsOf(server.child.pid)).not.toContain(token);
  });

  it('refuses to start, with a usage error, on an empty token file or a bad --trust-proxy', async () => {
    dataDir = tempDataDir();
    const empty = join(dataDir, 'empty');
    writeFileSync(empty, '\n');
    const noToken = await rmbg(['serve', '--port', '0', '--data-dir', dataDir, '--metrics-token-file', empty]);
    expect([noToken.exitCode, noToken.stderr]).toEqual([
      2,
      expect.stringMatching(/--metrics-token-file .*empty: the metrics token is empty/),
    ]);
    const badProxy = await rmbg(['serve', '--port', '0', '--data-dir', dataDir, '--trust-proxy', '10.0.0.0/40']);
    expect([badProxy.exitCode, badProxy.stderr]).toEqual([
      2,
      expect.stringMatching(/--trust-proxy: '10.0.0.0\/40' is not an IP address or a CIDR block/),
    ]);
  });
});

describe('rmbg serve --trust-proxy', () => {
  it('a flood of bad keys through the trusted proxy throttles its sender only; valid keys are served; /metrics is not given to the proxy', async () => {
    dataDir = tempDataDir();
    const { key } = await createKey(dataDir, 5);
    server = await startServe(dataDir, ['--trust-proxy', '127.0.0.1,::1', '--max-auth-failures', '3']);
    const account = (apiKey: string, client: string) =>
      call(`${server!.url}/v1.0/account`, { headers: { 'X-API-Key': apiKey, 'X-Forwarded-For': client } });
    // How many of 12 at once are refused depends on their timing; once they are all counted, the next one is.
    await Promise.all(Array.from({ length: 12 }, (_, i) => account(`rmbg_flood-${i}`, '203.0.113.7')));
    expect((await account('rmbg_flood', '203.0.113.7')).status).toBe(429);
    // Another client of the same proxy: its own count, and its valid key served.
    const typo = await account('rmbg_typo', '198.51.100.20');
    expect([typo.status, errorCode(typo)]).toEqual([403, 'invalid_api_key']);
    expect((await account(key, '198.51.100.20')).status).toBe(200);
    // The flooding client's own valid key is served too.
    expect((await account(key, '203.0.113.7')).status).toBe(200);
    // Through the proxy, a loopback peer is not a loopback caller.
    expect((await call(`${server.url}/metrics`)).status).toBe(404);
  });
});
