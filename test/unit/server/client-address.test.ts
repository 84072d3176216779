// Who the client is, as the app sees it through app.inject (which sets the socket's peer): the throttle of
// failed keys counts by X-Forwarded-For only from a trusted proxy, never refuses a key valid lately, and /metrics'
// loopback rule is never granted to a request that came through a proxy. Real service, SQLite store.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { buildApp } from '../../../src/server/build-app.js';
import { createMetrics } from '../../../src/server/metrics.js';
import { trustedProxies } from '../../../src/server/trusted-proxies.js';
import { createService, type Service } from '../../../src/service/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { testEngine, testImage, TEST_APP_LIMITS, TEST_SERVICE_LIMITS } from '../../helpers/sharp-test-engine.js';

const MAX_AUTH_FAILURES = 3;

let dir: string;
let store: Store;
let service: Service;
let app: FastifyInstance;
let key: string;
let image: Buffer;

async function start(trustProxy?: string[], listen: { host?: string; metricsToken?: string } = {}): Promise<void> {
  const metrics = createMetrics();
  service = await createService({
    store,
    engine: testEngine(),
    ...TEST_SERVICE_LIMITS,
    maxAuthFailures: MAX_AUTH_FAILURES,
    observer: metrics.observer,
  });
  metrics.status = () => service.status();
  app = buildApp({
    service,
    ...TEST_APP_LIMITS,
    metrics,
    ...(trustProxy ? { trustProxy } : {}),
    ...listen,
  });
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-client-address-'));
  store = await openStore(dir);
  key = (await store.createAccountWithKey({ plan: 'pro', credits: 10 })).key;
  image = await testImage(64, 48);
});
afterEach(async () => {
  await app?.close();
  await service?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A request from the socket peer `from`, with X-Forwarded-For when `forwardedFor` is given. */
function removeBackground(from: string, apiKey: string | undefined, forwardedFor?: string) {
  return app.inject({
    method: 'POST',
    url: '/v1.0/removebg',
    remoteAddress: from,
    headers: {
      'content-type': 'application/json',
      ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }),
      ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }),
    },
    payload: JSON.stringify({ image_file_b64: image.toString('base64'), size: 'preview' }),
  });
}

function account(from: string, apiKey: string | undefined, forwardedFor?: string) {
  return app.inject({
    url: '/v1.0/account',
    remoteAddress: from,
    headers: {
      ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }),
      ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }),
    },
  });
}

function codeOf(response: { statusCode: number; body: string }): [number, string] {
  return [
    response.statusCode,
    response.statusCode === 200
      ? 'ok'
      : (JSON.parse(response.body) as { errors: Array<{ code: string }> }).errors[0]!.code,
  ];
}

async function balance(): Promise<number> {
  return (await store.balance((await store.accountForKey(key))!.accountId)).total;
}

describe('the throttle of failed keys', () => {
  it('never refuses a key valid lately, even from an address flooded with bad ones; missing and bad keys from it get 429 with Retry-After', async () => {
    await start();
    const flooded = '10.0.0.9';
    // The customer behind the address used its key before the flood (a key the server has not seen valid lately
    // is not looked up for a refused address: see the next assertion's end).
    expect(codeOf(await account(flooded, key))).toEqual([200, 'ok']);
    for (let i = 0; i < MAX_AUTH_FAILURES; i += 1)
      expect(codeOf(await removeBackground(flooded, `rmbg_bad${i}`))).toEqual([403, 'invalid_api_key']);
    const refused = await removeBackground(flooded, 'rmbg_bad-again');
    expect(codeOf(refused)).toEqual([429, 'rate_limited']);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(codeOf(await removeBackground(flooded, undefined))).toEqual([429, 'rate_limited']);
    expect(codeOf(await account(flooded, 'rmbg_bad-too'))).toEqual([429, 'rate_limited']);

    // The customer behind the same address (a NAT, a proxy) is served, and pays as usual.
    expect(codeOf(await removeBackground(flooded, key))).toEqual([200, 'ok']);
    expect(codeOf(await account(flooded, key))).toEqual([200, 'ok']);
    expect(await balance()).toBe(9);
    // Serving it did not lift the refusal of bad keys.
    expect(codeOf(await removeBackground(flooded, 'rmbg_bad-still'))).toEqual([429, 'rate_limited']);
  });

  it('a flood of bad keys through a trusted proxy throttles its sender only: valid keys and other clients through the proxy are served', async () => {
    // nginx on this machine in front of the server.
    await start(['127.0.0.1']);
    const proxy = '127.0.0.1';
    for (let i = 0; i < MAX_AUTH_FAILURES + 5; i += 1) await removeBackground(proxy, `rmbg_flood${i}`, '203.0.113.7');
    expect(codeOf(await removeBackground(proxy, 'rmbg_flood', '203.0.113.7'))).toEqual([429, 'rate_limited']);

    // Another client through the same proxy: its own address, its own count.
    expect(codeOf(await removeBackground(proxy, 'rmbg_typo', '198.51.100.20'))).toEqual([403, 'invalid_api_key']);
    expect(codeOf(await removeBackground(proxy, key, '198.51.100.20'))).toEqual([200, 'ok']);
    expect(codeOf(await account(proxy, key, '198.51.100.21'))).toEqual([200, 'ok']);
    // A client's own X-Forwarded-For before nginx's entry names nobody: the proxy's rightmost entry counts.
    expect(codeOf(await removeBackground(proxy, 'rmbg_flood', '198.51.100.99, 203.0.113.7'))).toEqual([
      429,
      'rate_limited',
    ]);
    expect(await balance()).toBe(9);
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy: the peer is the client', async () => {
    await start(['10.0.0.1']);
    const untrusted = '10.0.0.66';
    for (let i = 0; i < MAX_AUTH_FAILURES; i += 1)
      expect(codeOf(await removeBackground(untrusted, 'rmbg_bad', `192.0.2.${i}`))).toEqual([403, 'invalid_api_key']);
    // A fresh forwarded address does not give it a fresh count.
    expect(codeOf(await removeBackground(untrusted, 'rmbg_bad', '192.0.2.200'))).toEqual([429, 'rate_limited']);
    // Through the trusted proxy, that forwarded address is somebody else, not throttled.
    expect(codeOf(await removeBackground('10.0.0.1', 'rmbg_bad', '192.0.2.200'))).toEqual([403, 'invalid_api_key']);
  });

  it('ignores X-Forwarded-For when no proxy is trusted (the default)', async () => {
    await start();
    for (let i = 0; i < MAX_AUTH_FAILURES; i += 1) await removeBackground('127.0.0.1', 'rmbg_bad', `192.0.2.${i}`);
    expect(codeOf(await removeBackground('127.0.0.1', 'rmbg_bad', '192.0.2.201'))).toEqual([429, 'rate_limited']);
  });
});

describe('/metrics and proxies', () => {
  const scrape = (from: string, headers: Record<string, string> = {}) =>
    app.inject({ url: '/metrics', remoteAddress: from, headers });

  it('is refused (404) to a request through a trusted proxy on loopback, whatever address it forwards', async () => {
    await start(['127.0.0.1', '10.0.0.0/8']);
    for (const forwarded of ['127.0.0.1', '::1', '198.51.100.7']) {
      expect(codeOf(await scrape('127.0.0.1', { 'x-forwarded-for': forwarded }))).toEqual([404, 'not_found']);
    }
    // The proxy forwarded no header (nginx without proxy_set_header): still a request through it.
    expect(codeOf(await scrape('127.0.0.1'))).toEqual([404, 'not_found']);
    expect(codeOf(await scrape('::ffff:127.0.0.1'))).toEqual([404, 'not_found']);
    // A trusted proxy elsewhere forwarding a loopback address grants nothing either.
    expect(codeOf(await scrape('10.2.3.4', { 'x-forwarded-for': '127.0.0.1' }))).toEqual([404, 'not_found']);
    // Nor a loopback caller that names no proxy: a server that trusts a proxy needs a token for /metrics.
    expect(codeOf(await scrape('::1'))).toEqual([404, 'not_found']);
  });

  it('needs the token whenever the server listens beyond loopback or trusts a proxy, loopback callers included', async () => {
    for (const [trustProxy, host] of [
      [undefined, '0.0.0.0'],
      [undefined, '::'],
      [undefined, '192.0.2.10'],
      [['10.0.0.0/8'], '127.0.0.1'],
    ] as const) {
      await start(trustProxy && [...trustProxy], { host });
      // A TLS terminator on this machine that adds no forwarding header looks like this: refused.
      expect(codeOf(await scrape('127.0.0.1')), host).toEqual([404, 'not_found']);
      await app.close();
      await service.close();
      await start(trustProxy && [...trustProxy], { host, metricsToken: 'scrape-token' });
      expect(codeOf(await scrape('127.0.0.1', { authorization: 'Bearer scrape-token' })), host).toEqual([200, 'ok']);
      await app.close();
      await service.close();
    }
    for (const host of ['127.0.0.1', '::1', 'localhost']) {
      await start(undefined, { host });
      expect(codeOf(await scrape('127.0.0.1')), host).toEqual([200, 'ok']);
      await app.close();
      await service.close();
    }
  });

  it('is refused to a loopback peer that forwards for someone, when no proxy is declared', async () => {
    await start();
    for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
      expect(
        codeOf(await scrape('127.0.0.1', { [header]: header === 'forwarded' ? 'for=198.51.100.7' : '198.51.100.7' })),
      ).toEqual([404, 'not_found']);
    }
    expect(codeOf(await scrape('127.0.0.1'))).toEqual([200, 'ok']);
  });
});

describe('--trust-proxy entries', () => {
  it('takes addresses and CIDR blocks of both families, and refuses anything else with usage_error naming it', () => {
    const proxies = trustedProxies(['10.0.0.5', '10.1.0.0/16', 'fd00::/8', '::1']);
    expect(
      ['10.0.0.5', '::ffff:10.0.0.5', '10.1.200.3', 'fd12::1', '::1'].map((address) => proxies.trusts(address)),
    ).toEqual([true, true, true, true, true]);
    expect(
      ['10.0.0.6', '10.2.0.1', 'fe80::1', '127.0.0.1', 'not-an-ip', undefined].map((address) =>
        proxies.trusts(address),
      ),
    ).toEqual([false, false, false, false, false, false]);
    for (const bad of ['10.0.0.0/33', 'fd00::/129', '10.0.0', 'nginx', '10.0.0.0/8/1', '10.0.0.0/x', '']) {
      expect(() => trustedProxies([bad])).toThrow(RmbgError);
      expect(() => trustedProxies([bad])).toThrow(/--trust-proxy: '.*' is not an IP address or a CIDR block/);
    }
  });
});
