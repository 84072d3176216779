// Issue #38: a flood of bad keys from one address (a NAT, a proxy's client) must not lock out that address's valid
// keys, including keys this server never saw; issue #46: nor a key created a moment ago, and rotating through more
// addresses than the throttle remembers does not empty it. The real `rmbg serve` on 127.0.0.1 over the real SQLite
// and the real PostgreSQL, keys created and revoked by other processes (`rmbg keys`), as a user sees it: statuses
// and balances.

import { rmSync } from 'node:fs';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_THROTTLED_ADDRESSES } from '../../src/service/auth-throttle.js';
import { freshDatabase } from '../helpers/postgres.js';
import {
  balance,
  call,
  errorCode,
  type HttpAnswer,
  rmbg,
  type ServeProcess,
  startIdentityServe,
  tempDataDir,
} from '../helpers/serve-harness.js';

const MAX_AUTH_FAILURES = 5;
/** The proxy's client that floods bad keys; requests without X-Forwarded-For come from 127.0.0.1 itself. */
const FLOODER = '198.51.100.7';

interface Setup {
  name: string;
  /** The CLI's flags naming the store. */
  storeFlags: (dataDir: string) => Promise<string[]>;
}

const SETUPS: Setup[] = [
  { name: 'SQLite', storeFlags: async (dataDir) => ['--data-dir', dataDir] },
  { name: 'PostgreSQL', storeFlags: async () => ['--store', await freshDatabase()] },
];

let photo: Buffer;
beforeAll(async () => {
  photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
    .jpeg()
    .toBuffer();
});

describe.each(SETUPS)('on $name', ({ storeFlags }) => {
  let dataDir: string;
  let store: string[];
  let server: ServeProcess;
  /** Created before the server started, each never used before its test's flood. */
  let unused: string;
  let unusedBehindProxy: string;

  async function createKey(credits: number): Promise<string> {
    const created = await rmbg(['keys', 'create', '--json', '--credits', String(credits), ...store]);
    if (created.exitCode !== 0) throw new Error(`keys create failed: ${created.stderr}`);
    return (JSON.parse(created.stdout) as { key: string }).key;
  }

  const headers = (key: string | undefined, from: string | undefined): Record<string, string> => ({
    ...(key === undefined ? {} : { 'X-API-Key': key }),
    ...(from === undefined ? {} : { 'X-Forwarded-For': from }),
  });
  const account = (key: string | undefined, from?: string): Promise<HttpAnswer> =>
    call(`${server.url}/v1.0/account`, { headers: headers(key, from) });
  function upload(key: string, from?: string): Promise<HttpAnswer> {
    const form = new FormData();
    form.append('image_file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'photo.jpg');
    form.append('size', 'full');
    form.append('format', 'png');
    return call(`${server.url}/v1.0/removebg`, { method: 'POST', headers: headers(key, from), body: form });
  }
  /** Bad keys from `from` until its answers are 429. */
  async function flood(from?: string): Promise<void> {
    for (let i = 0; i < MAX_AUTH_FAILURES; i++) expect((await account(`rmbg_bad_${i}`, from)).status).toBe(403);
    expect((await account('rmbg_bad_over', from)).status).toBe(429);
  }

  beforeAll(async () => {
    dataDir = tempDataDir();
    store = await storeFlags(dataDir);
    unused = await createKey(5);
    unusedBehindProxy = await createKey(3);
    // The server is given the data directory already; PostgreSQL's URL comes on top of it.
    server = await startIdentityServe(dataDir, [
      ...(store[0] === '--store' ? store : []),
      '--max-auth-failures',
      String(MAX_AUTH_FAILURES),
      '--rate-limit',
      '1000',
      '--trust-proxy',
      '127.0.0.1',
    ]);
  });

  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a valid key never used here, from a flooded 127.0.0.1: upload 200 and account 200; bad and missing keys 429', async () => {
    await flood();
    const cut = await upload(unused);
    expect([cut.status, cut.headers.get('content-type')], cut.body.toString().slice(0, 300)).toEqual([
      200,
      'image/png',
    ]);
    expect((await account(unused)).status).toBe(200);
    expect(await balance(server.url, unused)).toMatchObject({ total: 4 });
    const bad = await account('rmbg_bad_after');
    expect([bad.status, errorCode(bad)]).toEqual([429, 'rate_limited']);
    expect((await account(undefined)).status).toBe(429);
  });

  it('behind --trust-proxy, one client flooding bad keys does not lock out its own valid key', async () => {
    const key = unusedBehindProxy;
    await flood(FLOODER);
    expect((await upload(key, FLOODER)).status).toBe(200);
    expect((await account(key, FLOODER)).status).toBe(200);
    expect((await account('rmbg_bad_again', FLOODER)).status).toBe(429);
  });

  it('a key created by another process while the server runs: 200 on its first request, from a flooded address too', async () => {
    await flood('198.51.100.8');
    const fromFlooded = await createKey(2);
    const first = await account(fromFlooded, '198.51.100.8');
    expect([first.status, first.body.toString().slice(0, 200)]).toEqual([200, expect.stringContaining('"credits"')]);
    expect(await balance(server.url, fromFlooded)).toMatchObject({ total: 2 });
    expect((await account('rmbg_bad_after_new_key', '198.51.100.8')).status).toBe(429);

    const fromOther = await createKey(2);
    expect((await account(fromOther, '203.0.113.51')).status).toBe(200);
  });

  it('a key revoked by another process is refused at its next request, from any address', async () => {
    const key = await createKey(2);
    expect((await account(key, '203.0.113.52')).status).toBe(200);
    const listed = await rmbg(['keys', 'list', '--json', ...store]);
    const id = (JSON.parse(listed.stdout) as Array<{ id: string; prefix: string }>).find((row) =>
      key.startsWith(row.prefix),
    )?.id as string;
    expect((await rmbg(['keys', 'revoke', id, ...store])).exitCode).toBe(0);
    const refused = await account(key, '203.0.113.52');
    expect([refused.status, errorCode(refused)]).toEqual([403, 'invalid_api_key']);
    await flood('198.51.100.9');
    expect((await account(key, '198.51.100.9')).status).toBe(429);
  });
});

describe('the throttle cannot be emptied by rotating addresses (SQLite, the default limit of 30)', () => {
  let dataDir: string;
  let server: ServeProcess;

  beforeAll(async () => {
    dataDir = tempDataDir();
    server = await startIdentityServe(dataDir, ['--trust-proxy', '127.0.0.1']);
  });

  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const account = (from: string) =>
    call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': 'rmbg_bad_again', 'X-Forwarded-For': from } });
  /** The statuses of bad keys, one from each address, 16 at a time. */
  async function badKeys(addresses: string[]): Promise<number[]> {
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = next++; i < addresses.length; i = next++) {
          const answer = await call(`${server.url}/v1.0/account`, {
            headers: { 'X-API-Key': `rmbg_bad_${i}`, 'X-Forwarded-For': addresses[i] as string },
          });
          statuses[i] = answer.status;
        }
      }),
    );
    return statuses;
  }

  it(`20 bad keys from one address, one each from ${MAX_THROTTLED_ADDRESSES + 1} others, 20 more: that address gets 429`, async () => {
    const first = '198.51.100.77';
    expect(await badKeys(Array(20).fill(first))).toEqual(Array(20).fill(403));
    const others = Array.from({ length: MAX_THROTTLED_ADDRESSES + 1 }, (_, i) => `10.9.${i >> 8}.${i & 255}`);
    expect(new Set(await badKeys(others))).toEqual(new Set([403]));
    const last = [];
    for (let i = 0; i < 20; i++) last.push((await account(first)).status);
    expect(last).toEqual([...Array(10).fill(403), ...Array(10).fill(429)]);
  }, 60_000);
});
