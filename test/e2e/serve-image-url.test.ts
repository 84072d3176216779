// image_url through the real `rmbg serve`: refused URLs (scheme, port, redirect, private and loopback
// addresses) answer 400 and charge nothing; with --allow-private-urls a local HTTPS server on 127.0.0.1:443
// (throwaway CA) delivers the image. The only file of the e2e tests that binds port 443. A tiny identity
// model: what is checked is the fetch, not the cut.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsServer, type TestHttpsServer } from '../helpers/https-server.js';
import { createTestCa, type TestCa } from '../helpers/test-ca.js';
import {
  balance,
  call,
  createKey,
  ensureBuilt,
  errorCode,
  ROOT,
  SAMPLES,
  startIdentityServe,
  tempDataDir,
  type HttpAnswer,
  type ServeProcess,
} from '../helpers/serve-harness.js';

const photo = readFileSync(join(SAMPLES, 'rocket.jpg'));
const GUARD_BANNER = 'rmbg-test: loopback-only network installed';

let ca: TestCa;
let guardDir: string;
let https: TestHttpsServer;
/** Paths the HTTPS server on 127.0.0.1:443 was asked for, in order. */
let seen: string[] = [];

let strict: ServeProcess;
let strictDir: string;
let open: ServeProcess;
let openDir: string;

/**
 * A module for `node --import` that installs test/helpers/loopback-only-network.ts in the server process:
 * there, too, a connection to anything but loopback fails before a packet leaves.
 */
function writeNetworkGuard(dir: string): string {
  const source = readFileSync(join(ROOT, 'test', 'helpers', 'loopback-only-network.ts'), 'utf8');
  const js = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  writeFileSync(join(dir, 'loopback-only-network.mjs'), js);
  const entry = join(dir, 'install-guard.mjs');
  writeFileSync(
    entry,
    `import { installLoopbackOnlyNetwork } from './loopback-only-network.mjs';\ninstallLoopbackOnlyNetwork();\nprocess.stderr.write(${JSON.stringify(`${GUARD_BANNER}\n`)});\n`,
  );
  return pathToFileURL(entry).href;
}

beforeAll(async () => {
  await ensureBuilt();
  ca = createTestCa(['localhost', '127.0.0.1']);
  guardDir = mkdtempSync(join(tmpdir(), 'rmbg-net-guard-'));
  const guard = { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${writeNetworkGuard(guardDir)}`.trim() };
  strictDir = tempDataDir();
  openDir = tempDataDir();
  // Both servers trust the test CA, so the strict one fails for its policy and not for an unknown certificate.
  const env = { ...guard, NODE_EXTRA_CA_CERTS: ca.caCertPath };
  [strict, open] = await Promise.all([
    startIdentityServe(strictDir, ['--rate-limit', '1000'], env),
    startIdentityServe(
      openDir,
      ['--allow-private-urls', '--rate-limit', '1000', '--max-queue', '1', '--max-in-flight-per-key', '2'],
      env,
    ),
  ]);
  // Port 443 is taken last and held briefly: other test files wait for it.
  https = await startHttpsServer({
    key: ca.key,
    cert: ca.cert,
    host: '127.0.0.1',
    port: 443,
    retryForMs: 180_000,
    handler: (req, res) => {
      const path = new URL(req.url ?? '/', 'https://x').pathname;
      seen.push(path);
      if (path === '/photo.jpg')
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': photo.length }).end(photo);
      else if (path === '/trickle.jpg') trickle(res);
      else if (path === '/redirect') res.writeHead(302, { location: '/photo.jpg' }).end();
      else if (path === '/not-an-image') res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>');
      else res.writeHead(404, { 'content-type': 'text/plain' }).end('no such file');
    },
  });
}, 240_000);

/** A slow image server: the start of a JPEG, then one byte every 200 ms until the fetcher gives up. */
function trickle(res: import('node:http').ServerResponse): void {
  res.writeHead(200, { 'content-type': 'image/jpeg' });
  let sent = 0;
  const timer = setInterval(() => res.write(photo.subarray(sent, ++sent)), 200);
  res.on('close', () => clearInterval(timer));
}

afterAll(async () => {
  await https?.close();
  await Promise.all([strict?.stop(), open?.stop()]);
  for (const dir of [strictDir, openDir, guardDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  ca?.cleanup();
});

type Encoding = 'json' | 'urlencoded' | 'multipart';
const ENCODINGS: readonly Encoding[] = ['json', 'urlencoded', 'multipart'];

function postUrl(
  server: ServeProcess,
  key: string,
  imageUrl: string,
  encoding: Encoding,
  fields: Record<string, string> = {},
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  const all = { image_url: imageUrl, ...fields };
  let body: string | FormData;
  const sent: Record<string, string> = { 'X-API-Key': key, ...headers };
  if (encoding === 'json') {
    body = JSON.stringify(all);
    sent['Content-Type'] = 'application/json';
  } else if (encoding === 'urlencoded') {
    body = new URLSearchParams(all).toString();
    sent['Content-Type'] = 'application/x-www-form-urlencoded';
  } else {
    body = new FormData();
    for (const [name, value] of Object.entries(all)) body.append(name, value);
  }
  return call(`${server.url}/v1.0/removebg`, { method: 'POST', body, headers: sent });
}

function detail(answer: HttpAnswer): string {
  return (JSON.parse(answer.body.toString()) as { errors: Array<{ detail: string }> }).errors[0]!.detail;
}

function expectRefused(answer: HttpAnswer, label: string): void {
  expect([answer.status, errorCode(answer)], `${label}: ${answer.body.toString()}`).toEqual([400, 'invalid_image_url']);
  expect(answer.headers.get('content-type'), label).toMatch(/^application\/json/);
  expect(answer.headers.get('x-request-id'), label).toMatch(/^[0-9a-f-]{36}$/);
}

describe('the network guard of the server processes', () => {
  it('is installed in both servers, and only one of them warns about --allow-private-urls', () => {
    expect(strict.stderr()).toContain(GUARD_BANNER);
    expect(open.stderr()).toContain(GUARD_BANNER);
    expect(open.stderr()).toMatch(/WARNING: --allow-private-urls/);
    expect(strict.stderr()).not.toMatch(/allow-private-urls/);
  });
});

describe('without --allow-private-urls', () => {
  // [URL, what the refusal must name]. Every host here is loopback, private or a literal address:
  // nothing needs DNS beyond /etc/hosts, and nothing may be connected to. A refused address is named in the
  // server's log only: the answer says the same for each (it must not map private DNS for the caller).
  const refused: Array<[string, RegExp]> = [
    ['http://127.0.0.1/photo.jpg', /scheme http/],
    ['https://127.0.0.1:8443/photo.jpg', /port 8443/],
    ['https://localhost/redirect', /not public/],
    ['https://127.0.0.1/photo.jpg', /loopback/],
    ['https://127.0.0.1:443/photo.jpg', /loopback/],
    ['https://10.0.0.1/photo.jpg', /private address \(10\.0\.0\.0\/8\)/],
    ['https://169.254.169.254/latest/meta-data/', /cloud metadata/],
    ['https://[::1]/photo.jpg', /loopback/],
    ['https://[::ffff:127.0.0.1]/photo.jpg', /127\.0\.0\.1/],
    ['https://[fd00:ec2::254]/photo.jpg', /cloud metadata/],
    ['https://localhost/photo.jpg', /resolves to 127\.0\.0\.1/],
    ['https://0.0.0.0/photo.jpg', /not public/],
    // Other spellings of 127.0.0.1 that URL parsing normalises.
    ['https://2130706433/photo.jpg', /loopback/],
    ['https://0x7f.1/photo.jpg', /loopback/],
    ['https://user:secret@localhost/photo.jpg', /credentials/],
  ];

  it('answers 400 invalid_image_url in every encoding, charges nothing and never reaches the HTTPS server', async () => {
    const { key } = await createKey(strictDir, 5);
    seen = [];
    let i = 0;
    let logged = strict.stderr().length;
    for (const [url, reason] of refused) {
      const encoding = ENCODINGS[i++ % ENCODINGS.length]!;
      const answer = await postUrl(strict, key, url, encoding);
      expectRefused(answer, `${url} (${encoding})`);
      if (/scheme|port|credentials/.test(reason.source)) expect(detail(answer), url).toMatch(reason);
      else {
        expect(detail(answer), url).toBe(
          'image_url does not resolve to a public address. Only public internet addresses are allowed ' +
            '(names that do not resolve, private networks, loopback, link-local and cloud metadata addresses are refused)',
        );
        await expect.poll(() => strict.stderr().slice(logged), { message: url }).toMatch(reason);
      }
      logged = strict.stderr().length;
    }
    // The same refusals in the other encodings too, for the cases that differ in kind.
    for (const url of ['http://127.0.0.1/photo.jpg', 'https://localhost/photo.jpg', 'https://10.0.0.1/photo.jpg']) {
      for (const encoding of ENCODINGS)
        expectRefused(await postUrl(strict, key, url, encoding), `${url} (${encoding})`);
    }
    expect(seen).toEqual([]);
    expect(await balance(strict.url, key)).toEqual({ total: 5, subscription: 0, payg: 5 });
  });
});

describe('with --allow-private-urls (local testing)', () => {
  it('fetches https://localhost/photo.jpg from the local HTTPS server: 200, the cut-out, one credit (JSON body)', async () => {
    const { key } = await createKey(openDir, 3);
    seen = [];
    const answer = await postUrl(open, key, 'https://localhost/photo.jpg', 'json');
    expect(answer.status, answer.body.toString()).toBe(200);
    expect(seen).toEqual(['/photo.jpg']);
    expect(answer.headers.get('content-type')).toBe('image/png');
    expect(answer.headers.get('x-credits-charged')).toBe('1');
    const meta = await sharp(answer.body).metadata();
    expect([meta.format, meta.hasAlpha]).toEqual(['png', true]);
    expect([String(meta.width), String(meta.height)]).toEqual([
      answer.headers.get('x-width'),
      answer.headers.get('x-height'),
    ]);
    // The rocket photo is 640x427; the default size (preview) keeps it under 0.25 MP.
    expect((meta.width ?? 0) * (meta.height ?? 0)).toBeLessThanOrEqual(250_000);
    expect(await balance(open.url, key)).toEqual({ total: 2, subscription: 0, payg: 2 });
  });

  it('fetches by IP address too, from urlencoded and multipart bodies (port 443 spelled out is port 443)', async () => {
    const { key } = await createKey(openDir, 3);
    seen = [];
    const jpg = await postUrl(open, key, 'https://127.0.0.1/photo.jpg', 'urlencoded', { format: 'jpg' });
    expect(jpg.status, jpg.body.toString()).toBe(200);
    expect(jpg.headers.get('content-type')).toBe('image/jpeg');
    expect((await sharp(jpg.body).metadata()).format).toBe('jpeg');

    const json = await postUrl(
      open,
      key,
      'https://127.0.0.1:443/photo.jpg',
      'multipart',
      { size: 'small' },
      { Accept: 'application/json' },
    );
    expect(json.status, json.body.toString()).toBe(200);
    const data = (
      JSON.parse(json.body.toString()) as {
        data: { result_b64: string; result_width: number; credits_charged: number };
      }
    ).data;
    expect(data.credits_charged).toBe(1);
    expect((await sharp(Buffer.from(data.result_b64, 'base64')).metadata()).width).toBe(data.result_width);
    expect(seen).toEqual(['/photo.jpg', '/photo.jpg']);
    expect(await balance(open.url, key)).toMatchObject({ total: 1 });
  });

  it('still refuses http, other ports and redirects (the redirect is not followed), charging nothing', async () => {
    const { key } = await createKey(openDir, 2);
    seen = [];
    for (const encoding of ENCODINGS) {
      expectRefused(await postUrl(open, key, 'http://127.0.0.1/photo.jpg', encoding), `http (${encoding})`);
      expectRefused(await postUrl(open, key, 'https://127.0.0.1:8443/photo.jpg', encoding), `port 8443 (${encoding})`);
    }
    expect(seen).toEqual([]);
    const redirect = await postUrl(open, key, 'https://localhost/redirect', 'json');
    expectRefused(redirect, 'redirect');
    expect(detail(redirect)).toMatch(/302 \(redirect\)/);
    expect(seen).toEqual(['/redirect']);
    expect(await balance(open.url, key)).toEqual({ total: 2, subscription: 0, payg: 2 });
  });

  it('answers 400 and refunds when the URL answers 404 or with something that is not an image', async () => {
    const { key } = await createKey(openDir, 2);
    const missing = await postUrl(open, key, 'https://localhost/missing.jpg', 'json');
    expect([missing.status, errorCode(missing)]).toEqual([400, 'image_url_unreachable']);
    expect(detail(missing)).toContain('404');
    const html = await postUrl(open, key, 'https://localhost/not-an-image', 'urlencoded');
    expect(html.status).toBe(400);
    expect(['unsupported_image_format', 'corrupt_image']).toContain(errorCode(html));
    expect(await balance(open.url, key)).toEqual({ total: 2, subscription: 0, payg: 2 });
  });
});

describe('a slow image_url does not hold the engine (--max-queue 1, --max-in-flight-per-key 2)', () => {
  it('one key trickling URLs is capped at 2 in flight (429); another key is served meanwhile', async () => {
    const [slow, other] = await Promise.all([createKey(openDir, 5), createKey(openDir, 5)]);
    seen = [];
    const cancel = new AbortController();
    const trickles = [1, 2].map(() =>
      call(`${open.url}/v1.0/removebg`, {
        method: 'POST',
        body: JSON.stringify({ image_url: 'https://localhost/trickle.jpg' }),
        headers: { 'X-API-Key': slow.key, 'Content-Type': 'application/json' },
        signal: cancel.signal,
      }).catch(() => undefined),
    );
    await expect.poll(() => seen.filter((path) => path === '/trickle.jpg').length, { timeout: 20_000 }).toBe(2);
    // Both downloads are running: a third request of the same key is refused, not queued.
    const third = await postUrl(open, slow.key, 'https://localhost/trickle.jpg', 'json');
    expect([third.status, errorCode(third), third.headers.get('retry-after')]).toEqual([429, 'rate_limited', '2']);
    // Another key's upload and image_url are processed while the slow downloads continue.
    const form = new FormData();
    form.append('image_file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'rocket.jpg');
    const upload = await call(`${open.url}/v1.0/removebg`, {
      method: 'POST',
      body: form,
      headers: { 'X-API-Key': other.key },
    });
    expect(upload.status, upload.body.toString()).toBe(200);
    const byUrl = await postUrl(open, other.key, 'https://localhost/photo.jpg', 'json');
    expect(byUrl.status, byUrl.body.toString()).toBe(200);
    expect(await balance(open.url, other.key)).toMatchObject({ total: 3 });
    cancel.abort();
    await Promise.all(trickles);
    // The cancelled downloads were never charged.
    expect(await balance(open.url, slow.key)).toMatchObject({ total: 5 });
  });
});
