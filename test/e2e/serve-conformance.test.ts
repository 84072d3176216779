// `rmbg serve` checked rule by rule against spec/api-spec.md with real HTTP, for the rules that
// serve-api.test.ts does not already cover: error bodies and headers everywhere, routing, the account
// record, idempotent replays in detail, format=auto, JPG flattening, size ceilings and the PNG cap.

import { readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegWithOrientation } from '../fixtures/exif-images.js';
import { animatedWebp, gif, jpegBombHeader, pngBombHeader, widePng } from '../fixtures/hostile-images.js';
import {
  balance,
  call,
  createKey,
  ensureBuilt,
  rmbg,
  SAMPLES,
  startServe,
  tempDataDir,
  type HttpAnswer,
  type ServeProcess,
} from './serve-harness.js';

const RATE_LIMIT = 40;
const photo = readFileSync(join(SAMPLES, 'rocket.jpg'));
let server: ServeProcess;
let dataDir: string;

beforeAll(async () => {
  await ensureBuilt();
  dataDir = tempDataDir();
  server = await startServe(dataDir, ['--rate-limit', String(RATE_LIMIT), '--no-ui']);
});

afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A flat light background with a red disc: a clean foreground whose box is known. */
function discImage(width: number, height: number, disc: { cx: number; cy: number; r: number }): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#dfe8f0"/><circle cx="${disc.cx}" cy="${disc.cy}" r="${disc.r}" fill="#c0392b"/></svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
}

function form(fields: Record<string, string> = {}, file: Buffer | null = photo): FormData {
  const body = new FormData();
  if (file) body.append('image_file', new Blob([new Uint8Array(file)], { type: 'image/jpeg' }), 'image.jpg');
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  return body;
}

function post(
  key: string | undefined,
  body: NonNullable<RequestInit['body']>,
  headers: Record<string, string> = {},
  path = '/v1.0/removebg',
): Promise<HttpAnswer> {
  return call(`${server.url}${path}`, {
    method: 'POST',
    body,
    headers: { ...(key ? { 'X-API-Key': key } : {}), ...headers },
  });
}

function postJson(
  key: string,
  fields: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  return post(key, JSON.stringify(fields), { 'Content-Type': 'application/json', ...headers });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The spec's error body, exactly: {"errors":[{"title","code",…}]} as application/json, plus an X-Request-ID. */
function expectError(answer: HttpAnswer, status: number, code: string, label = code): void {
  const text = answer.body.toString();
  expect(answer.status, `${label}: ${text}`).toBe(status);
  expect(answer.headers.get('content-type'), label).toMatch(/^application\/json/);
  expect(answer.headers.get('x-request-id'), label).toMatch(UUID);
  const body = JSON.parse(text) as { errors: Array<Record<string, unknown>> };
  expect(Object.keys(body), label).toEqual(['errors']);
  expect(body.errors.length, label).toBeGreaterThanOrEqual(1);
  for (const error of body.errors) {
    expect(typeof error.title, label).toBe('string');
    expect(typeof error.code, label).toBe('string');
  }
  expect(body.errors[0]!.code, label).toBe(code);
}

/** Sends raw bytes on one connection and returns everything the server wrote until it closed the connection. */
function rawExchange(text: string, timeoutMs = 15_000): Promise<string> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = connect(Number(url.port), url.hostname, () => socket.write(text));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, timeoutMs);
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('error', reject);
  });
}

function statusLines(raw: string): string[] {
  return raw.match(/HTTP\/1\.1 \d{3}/g) ?? [];
}

async function pixel(image: Buffer, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(image).raw().toBuffer({ resolveWithObject: true });
  const at = (y * info.width + x) * info.channels;
  return [...data.subarray(at, at + info.channels)];
}

function expectColour(actual: number[], expected: number[], tolerance: number, label: string): void {
  expect(actual.length, label).toBe(expected.length);
  for (const [i, value] of actual.entries())
    expect(
      Math.abs(value - expected[i]!),
      `${label}: ${actual.join(',')} vs ${expected.join(',')}`,
    ).toBeLessThanOrEqual(tolerance);
}

const SUCCESS_HEADERS = [
  'x-width',
  'x-height',
  'x-credits-charged',
  'x-foreground-top',
  'x-foreground-left',
  'x-foreground-width',
  'x-foreground-height',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

describe('routing: the /v1.0 prefix, unknown paths, HEAD and OPTIONS', () => {
  it('answers 404 with the error body for paths without /v1.0 or with another version, and 405 with Allow for other methods', async () => {
    const { key } = await createKey(dataDir, 1);
    const withKey = { 'X-API-Key': key };
    for (const path of [
      '/removebg',
      '/account',
      '/v1/removebg',
      '/v2.0/account',
      '/V1.0/account',
      '/v1.0/account/',
      '/v1.0',
      '/',
    ]) {
      expectError(await call(`${server.url}${path}`, { headers: withKey }), 404, 'not_found', `GET ${path}`);
    }
    // An upload to a wrong place still gets its answer: the server reads the body away instead of
    // resetting the connection under a client that is still sending (which fetch reports as EPIPE).
    const upload = Buffer.concat(Array.from({ length: 20 }, () => photo)); // ~2 MB
    expectError(await post(key, form({}, upload), {}, '/removebg'), 404, 'not_found', 'POST /removebg');
    expectError(
      await post(key, form({}, upload), {}, '/v1.0/account'),
      405,
      'method_not_allowed',
      'POST /v1.0/account with a file',
    );
    expectError(
      await post(key, new Uint8Array(upload), { 'Content-Type': 'image/jpeg' }),
      415,
      'unsupported_content_type',
      'raw JPEG',
    );
    expectError(
      await post(key, form({}, upload), {}, '/v1.0/removebg?size=full'),
      400,
      'invalid_request',
      'query string with a file',
    );

    const getRemove = await call(`${server.url}/v1.0/removebg`, { headers: withKey });
    expectError(getRemove, 405, 'method_not_allowed', 'GET /v1.0/removebg');
    expect(getRemove.headers.get('allow')).toBe('POST');
    const postAccount = await post(key, '{}', { 'Content-Type': 'application/json' }, '/v1.0/account');
    expectError(postAccount, 405, 'method_not_allowed', 'POST /v1.0/account');
    expect(postAccount.headers.get('allow')).toBe('GET, HEAD');
    // No CORS preflight is offered: OPTIONS is a method like any other the endpoint does not take.
    const options = await call(`${server.url}/v1.0/removebg`, { method: 'OPTIONS' });
    expectError(options, 405, 'method_not_allowed', 'OPTIONS /v1.0/removebg');
    expect(options.headers.get('allow')).toBe('POST');
    const openapi = await call(`${server.url}/v1.0/openapi.json`);
    expect((JSON.parse(openapi.body.toString()) as { info: { version: string } }).info.version).toBe('1.0.0');
    // None of these reached the service: nothing was counted or charged.
    expect(await balance(server.url, key)).toEqual({ total: 1, subscription: 0, payg: 1 });
  });

  it('answers HEAD /v1.0/account like GET without a body, and HEAD /v1.0/removebg with 405', async () => {
    const { key } = await createKey(dataDir, 2);
    const get = await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
    const head = await call(`${server.url}/v1.0/account`, { method: 'HEAD', headers: { 'X-API-Key': key } });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    expect(head.headers.get('content-length')).toBe(String(get.body.length));
    expect(head.headers.get('x-request-id')).toMatch(UUID);
    expect(head.headers.get('x-ratelimit-limit')).toBe(String(RATE_LIMIT));

    const headRemove = await call(`${server.url}/v1.0/removebg`, { method: 'HEAD', headers: { 'X-API-Key': key } });
    expect(headRemove.status).toBe(405);
    expect(headRemove.headers.get('allow')).toBe('POST');
    expect(headRemove.headers.get('x-request-id')).toMatch(UUID);
  });
});

describe('GET /v1.0/account', () => {
  it('answers the account record: integers, total = subscription + payg, enterprise and free_calls 0, all sizes', async () => {
    const { key } = await createKey(dataDir, 7);
    expect((await rmbg(['credits', 'add', '3', '--key', key, '--subscription', '--data-dir', dataDir])).exitCode).toBe(
      0,
    );
    const answer = await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.headers.get('x-request-id')).toMatch(UUID);
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
      expect(answer.headers.get(name), name).toMatch(/^\d+$/);
    // The exact text: integers (10, not 10.0 or "10"), and no member beyond the spec's.
    expect(JSON.parse(answer.body.toString())).toStrictEqual({
      data: {
        attributes: {
          credits: { total: 10, subscription: 3, payg: 7, enterprise: 0 },
          api: { free_calls: 0, sizes: 'all' },
        },
      },
    });
    expect(answer.body.toString()).toContain('"total":10,"subscription":3,"payg":7,"enterprise":0');
  });

  it('ignores a body sent with GET and reads the next request on the connection correctly', async () => {
    const { key } = await createKey(dataDir, 4);
    // The body looks like a request of its own: it must be skipped as body, never answered.
    const smuggled = 'GET /v1.0/smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    const raw = await rawExchange(
      `GET /v1.0/account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}` +
        `GET /v1.0/account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
    );
    expect(statusLines(raw)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
    expect(raw).not.toContain('smuggled');
    expect(raw.match(/"total":4,/g)).toHaveLength(2);
  });

  it('answers 403 with the error body and an X-Request-ID, and no rate-limit headers before the key is known', async () => {
    const missing = await call(`${server.url}/v1.0/account`);
    expectError(missing, 403, 'missing_api_key');
    expect(missing.headers.get('x-ratelimit-limit')).toBeNull();
    expectError(
      await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': 'rmbg_not-a-key' } }),
      403,
      'invalid_api_key',
    );
    // OAuth is not supported: a valid key as a bearer token is no key at all.
    const { key } = await createKey(dataDir, 1);
    expectError(
      await call(`${server.url}/v1.0/account`, { headers: { Authorization: `Bearer ${key}` } }),
      403,
      'missing_api_key',
      'bearer',
    );
  });
});

describe('request rules that change no balance', () => {
  let key: string;
  beforeAll(async () => {
    key = (await createKey(dataDir, 3)).key;
  });

  it('answers 415 for text/plain, image/jpeg and a missing Content-Type, before looking at the key', async () => {
    expectError(
      await post(key, 'image_url=https://example.com/a.jpg', { 'Content-Type': 'text/plain' }),
      415,
      'unsupported_content_type',
      'text/plain',
    );
    expectError(
      await post(key, new Uint8Array(photo), { 'Content-Type': 'image/jpeg' }),
      415,
      'unsupported_content_type',
      'image/jpeg',
    );
    // fetch labels a string body text/plain; a Blob without a type goes out with no Content-Type at all.
    const untyped = await post(key, new Blob([new Uint8Array(photo)]));
    expectError(untyped, 415, 'unsupported_content_type', 'no Content-Type');
    expect(JSON.parse(untyped.body.toString()).errors[0].detail).toContain('no Content-Type');
    expectError(
      await post(undefined, 'x', { 'Content-Type': 'text/plain' }),
      415,
      'unsupported_content_type',
      'no key',
    );
    expect(await balance(server.url, key)).toEqual({ total: 3, subscription: 0, payg: 3 });
  });

  it('answers 400 for two sources, image_file outside multipart, a data: prefix in every encoding, and a query string', async () => {
    const b64 = photo.toString('base64');
    const urlencoded = { 'Content-Type': 'application/x-www-form-urlencoded' };
    const cases: Array<[Promise<HttpAnswer>, string, string]> = [
      [
        postJson(key, { image_url: 'https://example.com/a.jpg', image_file_b64: b64 }),
        'multiple_image_sources',
        'JSON url + b64',
      ],
      [
        post(
          key,
          new URLSearchParams({ image_url: 'https://example.com/a.jpg', image_file_b64: b64 }).toString(),
          urlencoded,
        ),
        'multiple_image_sources',
        'urlencoded url + b64',
      ],
      [post(key, form({ image_file_b64: b64 })), 'multiple_image_sources', 'multipart file + b64'],
      [
        post(key, new URLSearchParams({ image_file: b64 }).toString(), urlencoded),
        'invalid_request',
        'urlencoded image_file',
      ],
      [post(key, form({ image_file_b64: `data:image/jpeg;base64,${b64}` }, null)), 'invalid_base64', 'multipart data:'],
      [
        post(key, new URLSearchParams({ image_file_b64: `data:image/jpeg;base64,${b64}` }).toString(), urlencoded),
        'invalid_base64',
        'urlencoded data:',
      ],
      // The schema is closed: options in the query string are refused, not silently ignored.
      [post(key, form(), {}, '/v1.0/removebg?size=full'), 'invalid_request', 'query size'],
      [post(key, form(), {}, '/v1.0/removebg?shadow=1'), 'invalid_request', 'query shadow'],
    ];
    for (const [pending, code, label] of cases) expectError(await pending, 400, code, label);
    expect(await balance(server.url, key)).toEqual({ total: 3, subscription: 0, payg: 3 });
  });

  it('accepts an Idempotency-Key of 128 characters and refuses 129 with 400 invalid_idempotency_key', async () => {
    const broke = (await createKey(dataDir, 0)).key;
    // With no credits, getting as far as 402 shows the key itself was accepted.
    expectError(
      await post(broke, form(), { 'Idempotency-Key': 'k'.repeat(128) }),
      402,
      'insufficient_credits',
      '128 characters',
    );
    const tooLong = await post(key, form(), { 'Idempotency-Key': 'k'.repeat(129) });
    expectError(tooLong, 400, 'invalid_idempotency_key', '129 characters');
    expect(tooLong.headers.get('x-ratelimit-limit')).toBe(String(RATE_LIMIT));
    expectError(await post(key, form(), { 'Idempotency-Key': 'two words' }), 400, 'invalid_idempotency_key', 'a space');
    expect(await balance(server.url, key)).toEqual({ total: 3, subscription: 0, payg: 3 });
  });

  it('answers 429 on POST /v1.0/removebg with Retry-After and X-RateLimit-Remaining 0 once the key is over the limit', async () => {
    const { key: busy } = await createKey(dataDir, 1);
    for (let i = 0; i < RATE_LIMIT; i += 1)
      expect((await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': busy } })).status).toBe(200);
    const limited = await post(busy, form());
    expectError(limited, 429, 'rate_limited');
    expect(limited.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(limited.headers.get('x-ratelimit-reset')).toBe(limited.headers.get('retry-after'));
  });

  it('refuses images outside the limits with 400 and their own codes, refunding each', async () => {
    const { key: own } = await createKey(dataDir, 1);
    const cases: Array<[Buffer, string, string]> = [
      [await gif(), 'unsupported_image_format', 'GIF'],
      [await animatedWebp(), 'animated_image', 'animated WebP'],
      [await widePng(10000, 40), 'image_dimensions_out_of_range', '10000 pixels wide'],
      [pngBombHeader(9000, 6000), 'image_too_many_pixels', 'PNG claiming 54 MP'],
      [await jpegBombHeader(8000, 7000), 'image_too_many_pixels', 'JPEG claiming 56 MP'],
    ];
    for (const [image, code, label] of cases) expectError(await post(own, form({}, image)), 400, code, label);
    expect(await balance(server.url, own)).toEqual({ total: 1, subscription: 0, payg: 1 });
  });

  it('keeps serving after each bad request, on the same connection or a new one; then an image succeeds', async () => {
    const { key: own } = await createKey(dataDir, 1);
    const account = () => call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': own } });
    const bad: Array<() => Promise<HttpAnswer>> = [
      () => post(own, '{"image_url": ', { 'Content-Type': 'application/json' }),
      () =>
        post(own, '--x\r\nContent-Disposition: form-data; name="size"\r\n\r\nhd', {
          'Content-Type': 'multipart/form-data; boundary=x',
        }),
      () => post(own, 'hello', { 'Content-Type': 'text/plain' }),
      () => post(own, form({ size: 'huge' })),
      () => post(own, form({}, Buffer.from('not an image at all'))),
      () => call(`${server.url}/v1.0/removebg`, { method: 'DELETE' }),
    ];
    for (const request of bad) {
      const answer = await request();
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect((await account()).status).toBe(200);
    }
    // A body the server does not read (415) must not be parsed as the next request on the connection.
    const smuggled = 'GET /v1.0/smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    const raw = await rawExchange(
      `POST /v1.0/removebg HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}` +
        `GET /v1.0/account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${own}\r\nConnection: close\r\n\r\n`,
    );
    expect(statusLines(raw)[0]).toBe('HTTP/1.1 415');
    expect(raw).not.toContain('smuggled');
    expect(
      statusLines(raw)
        .slice(1)
        .every((line) => line === 'HTTP/1.1 200'),
    ).toBe(true);

    // An unread body is never drained at length: one declared larger than any request may be closes at once,
    // and one over 64 KiB that stops arriving is answered with Connection: close and the server's end of the
    // connection shut at once, instead of holding the connection for ever.
    const started = Date.now();
    const huge = await rawExchange('POST /v1.0/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\nabc');
    expect(statusLines(huge)).toEqual(['HTTP/1.1 404']);
    expect(huge).toMatch(/connection: close/i);
    const stalled = await rawExchange(
      'POST /v1.0/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc',
      30_000,
    );
    expect(statusLines(stalled)).toEqual(['HTTP/1.1 404']);
    expect(stalled).toMatch(/connection: close/i);
    expect(Date.now() - started).toBeLessThan(29_000);

    const good = await post(own, form({ size: 'preview' }));
    expect(good.status).toBe(200);
    expect(await balance(server.url, own)).toMatchObject({ total: 0 });
  });
});

describe('success headers and idempotent replay', () => {
  it('sets every spec header as a decimal string, and a replay repeats body and headers byte for byte with X-Idempotent-Replayed: true', async () => {
    const { key } = await createKey(dataDir, 3);
    const idem = { 'Idempotency-Key': 'conformance/replay-1' };
    const first = await post(key, form({ size: 'preview' }), idem);
    expect(first.status).toBe(200);
    for (const name of SUCCESS_HEADERS) expect(first.headers.get(name), name).toMatch(/^\d+$/);
    expect(first.headers.get('x-request-id')).toMatch(UUID);
    expect(first.headers.get('x-idempotent-replayed')).toBeNull();
    expect(first.headers.get('content-length')).toBe(String(first.body.length));

    const replay = await post(key, form({ size: 'preview' }), idem);
    expect(replay.status).toBe(200);
    expect(replay.body.equals(first.body)).toBe(true);
    expect(replay.headers.get('x-idempotent-replayed')).toBe('true');
    // Everything but the clock and the rate-limit counters of this call is the original's.
    const varying = new Set([
      'date',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
      'x-idempotent-replayed',
      'keep-alive',
      'connection',
    ]);
    const stable = (answer: HttpAnswer) =>
      Object.fromEntries([...answer.headers].filter(([name]) => !varying.has(name)));
    expect(stable(replay)).toEqual(stable(first));
    expect(await balance(server.url, key)).toMatchObject({ total: 2 });

    // The same bytes as base64 in JSON are the same request: replayed, here as the JSON result.
    const asJson = await postJson(
      key,
      { image_file_b64: photo.toString('base64'), size: 'preview' },
      { ...idem, Accept: 'application/json' },
    );
    expect(asJson.status).toBe(200);
    expect(asJson.headers.get('x-idempotent-replayed')).toBe('true');
    const data = (JSON.parse(asJson.body.toString()) as { data: { result_b64: string; credits_charged: number } }).data;
    expect(Buffer.from(data.result_b64, 'base64').equals(first.body)).toBe(true);
    expect(data.credits_charged).toBe(1);

    // Another image or other options under the key: 409, nothing charged.
    const other = await discImage(200, 150, { cx: 100, cy: 75, r: 40 });
    expectError(
      await post(key, form({ size: 'preview' }, other), idem),
      409,
      'idempotency_key_mismatch',
      'other image',
    );
    expectError(
      await post(key, form({ size: 'preview', bg_color: 'white' }), idem),
      409,
      'idempotency_key_mismatch',
      'other bg_color',
    );
    expect(await balance(server.url, key)).toMatchObject({ total: 2 });

    // Keys are per account: another account's request under the same key is its own (here: refused for credits).
    const { key: stranger } = await createKey(dataDir, 0);
    expectError(await post(stranger, form({ size: 'preview' }), idem), 402, 'insufficient_credits', 'other account');
  });
});

describe('output format and pixels', () => {
  // A 400x300 red disc on a light background: the corner is background, the centre foreground.
  let disc: Buffer;
  let key: string;
  beforeAll(async () => {
    disc = await discImage(400, 300, { cx: 200, cy: 150, r: 90 });
    key = (await createKey(dataDir, 10)).key;
  });

  it('format=jpg flattens transparency onto white and keeps the foreground', async () => {
    const answer = await post(key, form({ format: 'jpg' }, disc));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('image/jpeg');
    const meta = await sharp(answer.body).metadata();
    expect([meta.format, meta.hasAlpha, meta.width, meta.height]).toEqual(['jpeg', false, 400, 300]);
    expectColour(await pixel(answer.body, 2, 2), [255, 255, 255], 6, 'corner');
    expectColour(await pixel(answer.body, 200, 150), [192, 57, 43], 12, 'centre');
  });

  it('format=auto gives JPG when bg_color makes the result opaque, and PNG when bg_color is translucent', async () => {
    const opaque = await post(key, form({ bg_color: 'red' }, disc));
    expect(opaque.status).toBe(200);
    expect(opaque.headers.get('content-type')).toBe('image/jpeg');
    expect((await sharp(opaque.body).metadata()).format).toBe('jpeg');
    expectColour(await pixel(opaque.body, 2, 2), [255, 0, 0], 8, 'opaque corner');

    const translucent = await post(key, form({ bg_color: '#0000ff80' }, disc));
    expect(translucent.status).toBe(200);
    expect(translucent.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(translucent.body).metadata();
    expect([meta.format, meta.hasAlpha]).toEqual(['png', true]);
    expectColour(await pixel(translucent.body, 2, 2), [0, 0, 255, 128], 8, 'translucent corner');
    expect((await pixel(translucent.body, 200, 150))[3]).toBeGreaterThanOrEqual(250);
  });

  it('honours EXIF orientation: result size and foreground box are on the upright canvas', async () => {
    // Stored 120 wide and 160 high, shown (orientation 6) 160 wide and 120 high.
    const answer = await post(key, form({ format: 'png' }, await jpegWithOrientation(6, 160, 120)));
    expect(answer.status).toBe(200);
    expect([answer.headers.get('x-width'), answer.headers.get('x-height')]).toEqual(['160', '120']);
    const meta = await sharp(answer.body).metadata();
    expect([meta.width, meta.height, meta.orientation ?? 1]).toEqual([160, 120, 1]);
    const [left, top, width, height] = ['left', 'top', 'width', 'height'].map((side) =>
      Number(answer.headers.get(`x-foreground-${side}`)),
    );
    expect(left! + width!).toBeLessThanOrEqual(160);
    expect(top! + height!).toBeLessThanOrEqual(120);
  });

  it('never upscales: a 120x90 image stays 120x90 at size=50MP', async () => {
    const small = await discImage(120, 90, { cx: 60, cy: 45, r: 25 });
    const answer = await post(key, form({ size: '50MP', format: 'png' }, small));
    expect(answer.status).toBe(200);
    expect([answer.headers.get('x-width'), answer.headers.get('x-height')]).toEqual(['120', '90']);
    const meta = await sharp(answer.body).metadata();
    expect([meta.width, meta.height]).toEqual([120, 90]);
  });

  it('size=medium caps the result at 1.5 MP with the aspect kept; the foreground box is on the input canvas', async () => {
    const input = await discImage(2000, 1500, { cx: 1000, cy: 750, r: 400 });
    const answer = await post(key, form({ size: 'medium' }, input));
    expect(answer.status).toBe(200);
    const width = Number(answer.headers.get('x-width'));
    const height = Number(answer.headers.get('x-height'));
    expect(width * height).toBeLessThanOrEqual(1_500_000);
    expect(width * height).toBeGreaterThan(1_480_000);
    expect(Math.abs(width / height - 4 / 3)).toBeLessThan(0.01);
    const meta = await sharp(answer.body).metadata();
    expect([meta.width, meta.height]).toEqual([width, height]);
    // The disc spans 600..1400 x 350..1150 on the 2000x1500 input, not on the smaller result.
    const box = ['left', 'top', 'width', 'height'].map((side) => Number(answer.headers.get(`x-foreground-${side}`)));
    for (const [i, value] of box.entries())
      expect(Math.abs(value - [600, 350, 800, 800][i]!), `foreground ${box.join(',')}`).toBeLessThanOrEqual(20);
  });
});

describe('the 10 MP cap of PNG and format=auto', () => {
  let big: Buffer;
  let key: string;
  beforeAll(async () => {
    big = await discImage(4000, 3000, { cx: 2000, cy: 1500, r: 900 }); // 12 MP
    key = (await createKey(dataDir, 5)).key;
  });

  async function dimensions(
    answer: HttpAnswer,
  ): Promise<{ width: number; height: number; format: string | undefined }> {
    expect(answer.status, answer.body.toString().slice(0, 300)).toBe(200);
    const meta = await sharp(answer.body).metadata();
    expect([String(meta.width), String(meta.height)]).toEqual([
      answer.headers.get('x-width'),
      answer.headers.get('x-height'),
    ]);
    return { width: meta.width ?? 0, height: meta.height ?? 0, format: meta.format };
  }

  it('format=png at size=full: at most 10 MP', async () => {
    const png = await dimensions(await post(key, form({ size: 'full', format: 'png' }, big)));
    expect(png.format).toBe('png');
    expect(png.width * png.height).toBeLessThanOrEqual(10_000_000);
    expect(png.width * png.height).toBeGreaterThan(9_950_000);
  });

  it('format=auto at size=50MP: at most 10 MP even when the result is an opaque JPG', async () => {
    const auto = await dimensions(await post(key, form({ size: '50MP', bg_color: 'white' }, big)));
    expect(auto.format).toBe('jpeg');
    expect(auto.width * auto.height).toBeLessThanOrEqual(10_000_000);
    expect(auto.width * auto.height).toBeGreaterThan(9_950_000);
  });

  it('format=jpg at size=auto is not capped at 10 MP (and auto ignores the balance): the 12 MP input comes back whole', async () => {
    const jpg = await dimensions(await post(key, form({ size: 'auto', format: 'jpg' }, big)));
    expect([jpg.format, jpg.width, jpg.height]).toEqual(['jpeg', 4000, 3000]);
    expect(await balance(server.url, key)).toMatchObject({ total: 2 });
  });
});
