// `rmbg account` as a user runs it: the real CLI (bin/rmbg.js over dist/) against a scripted HTTP server on 127.0.0.1.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureBuilt, rmbg as runCli } from '../helpers/cli.js';
import {
  apiError,
  createFaultServer,
  json,
  respond,
  type FaultServer,
  type FaultStep,
} from '../helpers/fault-server.js';

const KEY = 'e2e-key-0001';
const ACCOUNT = {
  data: {
    attributes: {
      credits: { total: 1250, subscription: 1000, payg: 250, enterprise: 0 },
      api: { free_calls: 0, sizes: 'all' },
    },
  },
};

let server: FaultServer | undefined;
let configDir: string;

beforeAll(ensureBuilt);

beforeEach(() => {
  configDir = mkdtempSync(path.join(tmpdir(), 'rmbg-account-e2e-'));
});

afterEach(async () => {
  await server?.close();
  server = undefined;
  rmSync(configDir, { recursive: true, force: true });
});

/** The CLI with this test's own settings folder. */
const rmbg = (args: string[], env: Record<string, string> = {}) => runCli(args, { configDir, env, timeout: 60_000 });

async function serve(...script: FaultStep[]): Promise<FaultServer> {
  server = await createFaultServer({ script });
  return server;
}

describe('rmbg account', () => {
  it('prints the balance from GET {url}/v1.0/account, sending the key', async () => {
    const { url, requests } = await serve(json(200, ACCOUNT));
    const result = await rmbg(['account', '--api-url', `${url}/api`, '--api-key', KEY]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/total\s+1250/);
    expect(result.stdout).toMatch(/subscription\s+1000/);
    expect(result.stdout).toMatch(/pay-as-you-go\s+250/);
    expect(result.stdout).not.toContain(KEY);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ method: 'GET', path: '/api/v1.0/account' });
    expect(requests[0]!.headers['x-api-key']).toBe(KEY);
  });

  it('prints the JSON record with --json', async () => {
    const { url } = await serve(json(200, ACCOUNT));
    const result = await rmbg(['account', '--json', '--api-url', url, '--api-key', KEY]);
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(ACCOUNT);
  });

  it('takes the URL and key from RMBG_API_URL and RMBG_API_KEY', async () => {
    const { url, requests } = await serve(json(200, ACCOUNT));
    const result = await rmbg(['account', '--json'], { RMBG_API_URL: url, RMBG_API_KEY: 'env-key' });
    expect(result.exitCode).toBe(0);
    expect(requests[0]!.headers['x-api-key']).toBe('env-key');
  });

  it('takes them from the user settings file, and a flag wins over it', async () => {
    const { url, requests } = await serve(json(200, ACCOUNT), json(200, ACCOUNT));
    writeFileSync(path.join(configDir, 'config.json'), JSON.stringify({ apiUrl: url, apiKey: 'stored-key' }));
    expect((await rmbg(['account'])).exitCode).toBe(0);
    expect((await rmbg(['account', '--api-key', 'flag-key'])).exitCode).toBe(0);
    expect(requests.map((r) => r.headers['x-api-key'])).toEqual(['stored-key', 'flag-key']);
  });

  it('exits 2 with a clear message when the key or URL is missing, sending nothing', async () => {
    const { url, requests } = await serve(json(200, ACCOUNT));
    const noKey = await rmbg(['account', '--api-url', url]);
    expect(noKey.exitCode).toBe(2);
    expect(noKey.stderr).toMatch(/no API key given: pass --api-key or set RMBG_API_KEY/);
    const noUrl = await rmbg(['account', '--api-key', KEY]);
    expect(noUrl.exitCode).toBe(2);
    expect(noUrl.stderr).toMatch(/no API URL given: pass --api-url or set RMBG_API_URL/);
    const badUrl = await rmbg(['account', '--api-url', 'ftp://127.0.0.1/', '--api-key', KEY]);
    expect(badUrl.exitCode).toBe(2);
    expect(badUrl.stderr).toMatch(/must use http:\/\/ or https:\/\//);
    expect(requests).toHaveLength(0);
  });

  it('exits 1 with the message and code of an API error', async () => {
    const { url } = await serve(apiError(403, 'invalid_api_key', 'Invalid API key'));
    const result = await rmbg(['account', '--api-url', url, '--api-key', 'wrong']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('rmbg: Invalid API key (invalid_api_key)');
    expect(result.stdout).toBe('');
  });

  it('exits 1 on an answer that is not the API (upstream_error)', async () => {
    const { url } = await serve(respond(404, { headers: { 'content-type': 'text/html' }, body: '<h1>Not Found</h1>' }));
    const result = await rmbg(['account', '--api-url', url, '--api-key', KEY]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/HTTP 404.*\(upstream_error\)/);
  });

  it('follows Retry-After on a 503 and then prints the balance, telling the user about the wait', async () => {
    const { url, requests } = await serve(
      apiError(503, 'service_busy', 'Service busy', { 'retry-after': '1' }),
      json(200, ACCOUNT),
    );
    const result = await rmbg(['account', '--json', '--api-url', url, '--api-key', KEY]);
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(ACCOUNT);
    expect(result.stderr).toMatch(/HTTP 503 service_busy; retrying in 1\.0 s \(attempt 2 of 5\)/);
    expect(requests[1]!.arrivedAt - requests[0]!.arrivedAt).toBeGreaterThanOrEqual(1000);
  });
});
