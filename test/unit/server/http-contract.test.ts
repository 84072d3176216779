// The HTTP adapter on a real port of 127.0.0.1, over the real service and a real SQLite store, with the
// service tests' sharp-backed engine (fast, and able to hang or wait): status codes, headers and bodies
// as a client sees them, timeouts, disconnects and shutdown. This is where the HTTP contract of
// spec/api-spec.md is checked rule by rule; test/e2e/serve-cutouts.test.ts keeps what needs the real model.

import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectError, jsonResultOf, UUID } from '../../helpers/api-answers.js';
import { ERRORS, RmbgError } from '../../../src/api/errors.js';
import { HEADERS } from '../../../src/api/response-headers.js';
import { OPTION_FIELDS, SOURCE_FIELDS, UNSUPPORTED_FIELDS } from '../../../src/api/options.js';
import { MAX_BODY_BYTES } from '../../../src/api/request-limits.js';
import { KEEP_ALIVE_MS } from '../../../src/server/build-app.js';
import { createEngine } from '../../../src/engine/index.js';
import type { Engine } from '../../../src/engine/types.js';
import { startServer, type RunningServer } from '../../../src/server/start-server.js';
import { createService, type Service, type ServiceDeps } from '../../../src/service/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { warmKeyModel } from '../../fixtures/fast-models.js';
import {
  testEngine,
  testImage,
  type Behaviour,
  type TestEngine,
  TEST_SERVICE_LIMITS,
} from '../service/sharp-test-engine.js';

let dir: string;
let store: Store;
let engine: TestEngine;
let service: Service;
let server: RunningServer;
let key: string;
let image: Buffer;

/** Lines the server logged (level warn and up), when a test asked start() for them. */
let logged: string[] = [];

async function start(
  options: Partial<ServiceDeps> & { behaviour?: Behaviour; bodyTimeoutMs?: number; log?: boolean } = {},
): Promise<void> {
  engine = testEngine(options.behaviour);
  service = await createService({
    store,
    engine,
    ...TEST_SERVICE_LIMITS,
    ...options,
  });
  logged = [];
  const logger = options.log
    ? { level: 'warn', stream: { write: (line: string) => void logged.push(line) } }
    : undefined;
  server = await startServer({
    host: '127.0.0.1',
    port: 0,
    service,
    bodyTimeoutMs: options.bodyTimeoutMs ?? 5000,
    headersTimeoutMs: 5000,
    maxConnections: 100,
    maxUploads: 16,
    ...(logger ? { logger } : {}),
  });
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-server-'));
  store = await openStore(dir);
  key = (await store.createAccountWithKey({ plan: 'pro', credits: 10 })).key;
  image = await testImage(64, 48);
});

afterEach(async () => {
  await server?.close();
  await service?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function form(fields: Record<string, string> = {}, file: Buffer | null = image): FormData {
  const body = new FormData();
  if (file) body.append('image_file', new Blob([new Uint8Array(file)], { type: 'image/jpeg' }), 'photo.jpg');
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  return body;
}

async function post(body: NonNullable<RequestInit['body']>, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}/v1.0/removebg`, {
    method: 'POST',
    body,
    headers: { 'X-API-Key': key, ...headers },
  });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

function errorOf(body: Buffer): { title: string; code: string; detail: string } {
  const parsed = JSON.parse(body.toString()) as { errors: Array<{ title: string; code: string; detail: string }> };
  expect(parsed.errors).toHaveLength(1);
  return parsed.errors[0]!;
}

async function balance(): Promise<number> {
  const response = await fetch(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
  const account = (await response.json()) as { data: { attributes: { credits: { total: number } } } };
  return account.data.attributes.credits.total;
}

interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
}

/** Any request to the server, without a key unless the caller sends one. */
async function call(path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(`${server.url}${path}`, init);
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

function statusLines(raw: string): string[] {
  return raw.match(/HTTP\/1\.1 \d{3}/g) ?? [];
}

/** Sends raw bytes on a new connection and collects everything the server answers until it closes. */
function rawExchange(payload: string, keepOpenMs = 0): Promise<string> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(url.port), url.hostname, () => socket.write(payload));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    if (keepOpenMs > 0) setTimeout(() => socket.destroy(), keepOpenMs);
  });
}

describe('success', () => {
  beforeEach(() => start());

  it('answers image bytes with every header as a string, and no replay header', async () => {
    const response = await post(form({ size: 'preview' }));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(response.body).metadata();
    expect([meta.format, meta.width, meta.height, meta.hasAlpha]).toEqual(['png', 64, 48, true]);
    expect(response.headers.get('x-width')).toBe('64');
    expect(response.headers.get('x-height')).toBe('48');
    expect(response.headers.get('x-credits-charged')).toBe('1');
    expect(response.headers.get('x-foreground-top')).toBe('1');
    expect(response.headers.get('x-foreground-left')).toBe('2');
    expect(response.headers.get('x-foreground-width')).toBe('62');
    expect(response.headers.get('x-foreground-height')).toBe('47');
    expect(response.headers.get('x-ratelimit-limit')).toBe('60');
    expect(response.headers.get('x-ratelimit-remaining')).toBe('59');
    expect(Number(response.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers.get('x-idempotent-replayed')).toBeNull();
    expect(response.headers.get('content-length')).toBe(String(response.body.length));
    expect(await balance()).toBe(9);
  });

  it('answers exactly the spec JSON object with Accept: application/json', async () => {
    const response = await post(JSON.stringify({ image_file_b64: image.toString('base64') }), {
      'Content-Type': 'application/json',
      Accept: 'application/json',
    });
    const data = jsonResultOf(response);
    expect(data).toMatchObject({
      result_width: 64,
      result_height: 48,
      credits_charged: 1,
      foreground_top: 1,
      foreground_left: 2,
      foreground_width: 62,
      foreground_height: 47,
    });
    const meta = await sharp(Buffer.from(data.result_b64 as string, 'base64')).metadata();
    expect([meta.format, meta.width]).toEqual(['png', 64]);
    expect(response.headers.get('x-width')).toBe('64');
  });

  it('gives image bytes to Accept: */* and to browsers', async () => {
    for (const accept of [
      '*/*',
      'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
      'application/json;q=0',
    ]) {
      const response = await post(form(), { Accept: accept });
      expect(response.headers.get('content-type'), accept).toBe('image/png');
    }
  });

  it('accepts urlencoded bodies, and image_file_b64 as a multipart field', async () => {
    const body = new URLSearchParams({ image_file_b64: image.toString('base64'), crop: 'false' }).toString();
    const response = await post(body, { 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-width')).toBe('64');
    const b64 = await post(form({ image_file_b64: image.toString('base64'), size: 'small' }, null));
    expect(b64.status).toBe(200);
    expect(b64.headers.get('x-width')).toBe('64');
    expect(await balance()).toBe(8);
  });
});

describe('idempotent replay', () => {
  it('answers 409 while the first request runs, then replays it byte for byte and header for header, charged once', async () => {
    await start({ behaviour: { kind: 'gated' } });
    const idem = { 'Idempotency-Key': 'order-17' };
    const running = post(form({ size: 'preview' }), idem);
    await engine.started(1);
    const during = await post(form({ size: 'preview' }), idem);
    expectError(during, 409, 'idempotency_in_progress');
    expect(during.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    engine.release();
    const first = await running;
    expect(first.status).toBe(200);
    expect(first.headers.get('x-idempotent-replayed')).toBeNull();
    expect(await balance()).toBe(9);

    const again = await post(form({ size: 'preview' }), idem);
    expect(again.status).toBe(200);
    expect(again.body.equals(first.body)).toBe(true);
    expect(again.headers.get('x-idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-credits-charged')).toBe('1');
    expect(again.headers.get('x-request-id')).toBe(first.headers.get('x-request-id'));
    // Everything but the clock and the rate-limit counters of this call is the original's.
    const varying = new Set([
      'date',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
      'x-idempotent-replayed',
      'keep-alive',
      'connection',
    ]);
    const stable = (answer: Answer) => Object.fromEntries([...answer.headers].filter(([name]) => !varying.has(name)));
    expect(stable(again)).toEqual(stable(first));
    expect(engine.calls).toBe(1);
    expect(await balance()).toBe(9);

    // The same bytes as base64 in JSON are the same request: replayed, here as the JSON result.
    const asJson = await post(JSON.stringify({ image_file_b64: image.toString('base64'), size: 'preview' }), {
      ...idem,
      'Content-Type': 'application/json',
      Accept: 'application/json',
    });
    expect(asJson.status).toBe(200);
    expect(asJson.headers.get('x-idempotent-replayed')).toBe('true');
    const data = (JSON.parse(asJson.body.toString()) as { data: { result_b64: string; credits_charged: number } }).data;
    expect(Buffer.from(data.result_b64, 'base64').equals(first.body)).toBe(true);
    expect(data.credits_charged).toBe(1);

    // Another image or other options under the key: 409, nothing charged.
    const other = await testImage(32, 32, { r: 10, g: 200, b: 10 });
    expectError(await post(form({ size: 'preview' }, other), idem), 409, 'idempotency_key_mismatch', 'other image');
    expectError(await post(form({ size: 'medium' }), idem), 409, 'idempotency_key_mismatch', 'other size');
    expectError(
      await post(form({ size: 'preview', bg_color: 'white' }), idem),
      409,
      'idempotency_key_mismatch',
      'other bg_color',
    );
    expect(await balance()).toBe(9);

    // Keys are per account: another account's request under the same key is its own (here: refused for credits).
    const stranger = (await store.createAccountWithKey({ plan: 'pro', credits: 0 })).key;
    expectError(
      await post(form({ size: 'preview' }), { ...idem, 'X-API-Key': stranger }),
      402,
      'insufficient_credits',
      'other account',
    );
    expect(engine.calls).toBe(1);
  });

  it('accepts an Idempotency-Key of 128 characters and refuses 129 or a space with 400 invalid_idempotency_key', async () => {
    await start();
    // With no credits, getting as far as 402 shows the key itself was accepted.
    const broke = (await store.createAccountWithKey({ plan: 'pro', credits: 0 })).key;
    expectError(
      await post(form(), { 'Idempotency-Key': 'k'.repeat(128), 'X-API-Key': broke }),
      402,
      'insufficient_credits',
      '128 characters',
    );
    const tooLong = await post(form(), { 'Idempotency-Key': 'k'.repeat(129) });
    expectError(tooLong, 400, 'invalid_idempotency_key', '129 characters');
    expect(tooLong.headers.get('x-ratelimit-limit')).toBe('60');
    expectError(await post(form(), { 'Idempotency-Key': 'two words' }), 400, 'invalid_idempotency_key', 'a space');
    expect(await balance()).toBe(10);
  });
});

describe('errors', () => {
  beforeEach(() => start());

  it('answers other content types with 415 and the error body, before looking at the key, and keeps serving', async () => {
    for (const contentType of ['text/plain', 'application/octet-stream', 'image/jpeg']) {
      const response = await post('hello', { 'Content-Type': contentType });
      expectError(response, 415, 'unsupported_content_type', contentType);
      expect(errorOf(response.body).title).toBe(ERRORS.unsupported_content_type.title);
    }
    // fetch labels a string body text/plain; a Blob without a type goes out with no Content-Type at all.
    const untyped = await post(new Blob([new Uint8Array(image)]));
    expectError(untyped, 415, 'unsupported_content_type', 'no Content-Type');
    expect(errorOf(untyped.body).detail).toContain('no Content-Type');
    const missing = await request(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      body: 'hello',
      headers: { 'x-api-key': key },
    });
    expect(missing.statusCode).toBe(415);
    expect(errorOf(Buffer.from(await missing.body.arrayBuffer())).code).toBe('unsupported_content_type');
    const noKey = await call('/v1.0/removebg', {
      method: 'POST',
      body: 'x',
      headers: { 'Content-Type': 'text/plain' },
    });
    expectError(noKey, 415, 'unsupported_content_type', 'no key');
    expect(await balance()).toBe(10);
    expect((await post(form())).status).toBe(200);
  });

  it('answers malformed JSON with 400 invalid_request, not a framework error', async () => {
    const response = await post('{"image_url": ', { 'Content-Type': 'application/json' });
    expectError(response, 400, 'invalid_request');
  });

  it('answers parsing and schema errors with 400 and their codes, in every encoding, charging nothing', async () => {
    const b64 = image.toString('base64');
    const json = { 'Content-Type': 'application/json' };
    const urlencoded = { 'Content-Type': 'application/x-www-form-urlencoded' };
    const duplicated = form({ size: 'hd' });
    duplicated.append('size', 'small');
    const cases: Array<[Promise<Answer>, string, string]> = [
      [post(form({}, null)), 'missing_image_source', 'no source'],
      [post(form({ image_url: 'https://example.com/a.png' })), 'multiple_image_sources', 'multipart file + url'],
      [post(form({ image_file_b64: b64 })), 'multiple_image_sources', 'multipart file + b64'],
      [
        post(JSON.stringify({ image_url: 'https://example.com/a.jpg', image_file_b64: b64 }), json),
        'multiple_image_sources',
        'JSON url + b64',
      ],
      [
        post(
          new URLSearchParams({ image_url: 'https://example.com/a.jpg', image_file_b64: b64 }).toString(),
          urlencoded,
        ),
        'multiple_image_sources',
        'urlencoded url + b64',
      ],
      [post(form({ colour: 'red' })), 'unknown_field', 'colour'],
      [post(form({ resolution: 'hd' })), 'unknown_field', 'resolution'],
      [post(form({ size: 'huge' })), 'invalid_option', 'size huge'],
      [post(duplicated), 'invalid_request', 'a field twice'],
      [post(JSON.stringify({ image_file: b64 }), json), 'invalid_request', 'JSON image_file'],
      [
        post(new URLSearchParams({ image_file: b64 }).toString(), urlencoded),
        'invalid_request',
        'urlencoded image_file',
      ],
      [post(JSON.stringify({ image_file_b64: `data:image/jpeg;base64,${b64}` }), json), 'invalid_base64', 'JSON data:'],
      [post(form({ image_file_b64: `data:image/jpeg;base64,${b64}` }, null)), 'invalid_base64', 'multipart data:'],
      [
        post(new URLSearchParams({ image_file_b64: `data:image/jpeg;base64,${b64}` }).toString(), urlencoded),
        'invalid_base64',
        'urlencoded data:',
      ],
      [post('image_url=http%3A%2F%2Fexample.com%2Fx.jpg', urlencoded), 'invalid_image_url', 'http image_url'],
      // The schema is closed: options in the query string are refused, not silently ignored.
      [
        call('/v1.0/removebg?size=full', { method: 'POST', body: form(), headers: { 'X-API-Key': key } }),
        'invalid_request',
        'query size',
      ],
      [
        call('/v1.0/removebg?shadow=1', { method: 'POST', body: form(), headers: { 'X-API-Key': key } }),
        'invalid_request',
        'query shadow',
      ],
    ];
    for (const [pending, code, label] of cases) expectError(await pending, 400, code, label);
    expect(engine.calls).toBe(0);
    expect(await balance()).toBe(10);
  });

  it('refuses every unsupported parameter with 400 unsupported_parameter naming it, charging nothing', async () => {
    const cases: Array<[string, string]> = [
      ...UNSUPPORTED_FIELDS.map((name): [string, string] => [name, '1']),
      ['type', 'person'],
      ['type_level', '2'],
      ['channels', 'alpha'],
    ];
    for (const [name, value] of cases) {
      const answer = await post(form({ [name]: value }));
      expectError(answer, 400, 'unsupported_parameter', name);
      expect(errorOf(answer.body).detail, name).toContain(name);
    }
    // Empty values of unsupported parameters mean "not set": this body fails for its missing source instead.
    expectError(await post(form({ shadow: '', roi: '' }, null)), 400, 'missing_image_source', 'empty values');
    expect(await balance()).toBe(10);
  });

  it('answers authentication failures with 403 and no rate-limit headers before the key is known', async () => {
    const missing = await call('/v1.0/removebg', { method: 'POST', body: form() });
    expectError(missing, 403, 'missing_api_key');
    expect(missing.headers.get('x-ratelimit-limit')).toBeNull();
    const wrong = await post(form(), { 'X-API-Key': 'rmbg_not_a_key' });
    expectError(wrong, 403, 'invalid_api_key');
    const account = await call('/v1.0/account');
    expectError(account, 403, 'missing_api_key', 'account without key');
    expect(account.headers.get('x-ratelimit-limit')).toBeNull();
    expectError(
      await call('/v1.0/account', { headers: { 'X-API-Key': 'rmbg_not-a-key' } }),
      403,
      'invalid_api_key',
      'account, unknown key',
    );
    // OAuth is not supported: a valid key as a bearer token is no key at all.
    expectError(
      await call('/v1.0/account', { headers: { Authorization: `Bearer ${key}` } }),
      403,
      'missing_api_key',
      'bearer',
    );
    const free = (await store.createAccountWithKey({ plan: 'free', credits: 5 })).key;
    expectError(await post(form(), { 'X-API-Key': free }), 403, 'plan_without_api_access', 'free plan');
    const revoked = await store.createAccountWithKey({ plan: 'pro', credits: 5 });
    expect((await call('/v1.0/account', { headers: { 'X-API-Key': revoked.key } })).status).toBe(200);
    await store.revokeKey(revoked.id);
    expectError(await post(form(), { 'X-API-Key': revoked.key }), 403, 'invalid_api_key', 'revoked');
    expect(engine.calls).toBe(0);
  });

  it('answers paths outside /v1.0 with 404 and wrong methods with 405 and Allow, charging nothing', async () => {
    const withKey = { 'X-API-Key': key };
    for (const path of [
      '/v1.0/nothing',
      '/removebg',
      '/account',
      '/v1/removebg',
      '/v2.0/account',
      '/V1.0/account',
      '/v1.0/account/',
      '/v1.0/removebg/extra',
      '/v1.0',
    ])
      expectError(await call(path, { headers: withKey }), 404, 'not_found', `GET ${path}`);
    const getRemove = await call('/v1.0/removebg', { headers: withKey });
    expectError(getRemove, 405, 'method_not_allowed', 'GET /v1.0/removebg');
    expect(getRemove.headers.get('allow')).toBe('POST');
    const putRemove = await call('/v1.0/removebg', { method: 'PUT', headers: withKey });
    expectError(putRemove, 405, 'method_not_allowed', 'PUT /v1.0/removebg');
    const deleteAccount = await call('/v1.0/account', { method: 'DELETE', headers: withKey });
    expectError(deleteAccount, 405, 'method_not_allowed', 'DELETE /v1.0/account');
    expect(deleteAccount.headers.get('allow')).toBe('GET, HEAD');
    const postAccount = await call('/v1.0/account', {
      method: 'POST',
      body: '{}',
      headers: { ...withKey, 'Content-Type': 'application/json' },
    });
    expectError(postAccount, 405, 'method_not_allowed', 'POST /v1.0/account');
    expect(postAccount.headers.get('allow')).toBe('GET, HEAD');
    // No CORS preflight is offered: OPTIONS is a method like any other the endpoint does not take.
    const options = await call('/v1.0/removebg', { method: 'OPTIONS' });
    expectError(options, 405, 'method_not_allowed', 'OPTIONS /v1.0/removebg');
    expect(options.headers.get('allow')).toBe('POST');

    // An upload to a wrong place still gets its answer: the server reads the body away instead of
    // resetting the connection under a client that is still sending (which fetch reports as EPIPE).
    const upload = Buffer.alloc(2 * 1024 * 1024, 0x5a);
    const to = (path: string, body: NonNullable<RequestInit['body']>, headers: Record<string, string> = {}) =>
      call(path, { method: 'POST', body, headers: { ...withKey, ...headers } });
    expectError(await to('/removebg', form({}, upload)), 404, 'not_found', 'POST /removebg');
    expectError(await to('/v1.0/account', form({}, upload)), 405, 'method_not_allowed', 'POST /v1.0/account, a file');
    expectError(
      await to('/v1.0/removebg', new Uint8Array(upload), { 'Content-Type': 'image/jpeg' }),
      415,
      'unsupported_content_type',
      'raw JPEG',
    );
    expectError(await to('/v1.0/removebg?size=full', form({}, upload)), 400, 'invalid_request', 'query with a file');
    expect(engine.calls).toBe(0);
    expect(await balance()).toBe(10);
  });

  it('answers HEAD /v1.0/account like GET without a body, and HEAD /v1.0/removebg with 405', async () => {
    const get = await call('/v1.0/account', { headers: { 'X-API-Key': key } });
    const head = await call('/v1.0/account', { method: 'HEAD', headers: { 'X-API-Key': key } });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    expect(head.headers.get('content-length')).toBe(String(get.body.length));
    expect(head.headers.get('x-request-id')).toMatch(UUID);
    expect(head.headers.get('x-ratelimit-limit')).toBe('60');
    const headRemove = await call('/v1.0/removebg', { method: 'HEAD', headers: { 'X-API-Key': key } });
    expect(headRemove.status).toBe(405);
    expect(headRemove.headers.get('allow')).toBe('POST');
    expect(headRemove.headers.get('x-request-id')).toMatch(UUID);
  });

  it('refuses a declared Content-Length over the limit with 400 file_too_large, and the client receives it', async () => {
    const big = Buffer.alloc(MAX_BODY_BYTES.json + 1024, 0x41);
    const response = await request(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      body: big,
      headers: { 'content-type': 'application/json', 'x-api-key': key },
    });
    expect(response.statusCode).toBe(400);
    expect(errorOf(Buffer.from(await response.body.arrayBuffer())).code).toBe('file_too_large');
    expect((await post(form())).status).toBe(200);
  });

  it('refuses a 23 MiB image_file in a multipart body (under the body ceiling) with 400 file_too_large, and keeps serving', async () => {
    const answer = await post(form({}, Buffer.alloc(23 * 1024 * 1024, 0xff)));
    expectError(answer, 400, 'file_too_large');
    expect(engine.calls).toBe(0);
    expect(await balance()).toBe(10);
    expect((await post(form())).status).toBe(200);
  });

  it('stops reading a chunked body (no Content-Length) past the limit with 400 file_too_large', async () => {
    let sent = 0;
    async function* body() {
      yield Buffer.from('{"image_file_b64":"');
      for (; sent < 64 * 1024 * 1024; sent += 1024 * 1024) yield Buffer.alloc(1024 * 1024, 0x41);
      yield Buffer.from('"}');
    }
    const response = await request(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      body: Readable.from(body()),
      headers: { 'content-type': 'application/json', 'x-api-key': key },
    });
    expect(response.statusCode).toBe(400);
    expect(errorOf(Buffer.from(await response.body.arrayBuffer())).code).toBe('file_too_large');
    expect(sent).toBeLessThan(64 * 1024 * 1024);
    expect((await post(form())).status).toBe(200);
  });

  it('answers a malformed HTTP request with 400 and the error body', async () => {
    const answer = await rawExchange('BLAH /v1.0/removebg HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(answer).toMatch(/X-Request-ID: [0-9a-f-]{36}/i);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
      errors: [{ code: 'invalid_request' }],
    });
    expect((await post(form())).status).toBe(200);
  });
});

describe('limits and load', () => {
  it('answers a stalled body with 408 request_timeout after the body timeout', async () => {
    await start({ bodyTimeoutMs: 300 });
    const started = Date.now();
    const answer = await rawExchange(
      `POST /v1.0/removebg HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"image_url":`,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(answer).toMatch(/x-request-id: [0-9a-f-]{36}/i);
    expect(answer).toMatch(/connection: close/i);
    expect(answer).toContain('"code":"request_timeout"');
    expect((await post(form())).status).toBe(200);
  });

  it('answers 429 with Retry-After and rate-limit headers', async () => {
    await start({ rateLimit: 1 });
    expect((await post(form())).status).toBe(200);
    const limited = await post(form());
    expect(limited.status).toBe(429);
    expect(errorOf(limited.body).code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(limited.headers.get('x-ratelimit-limit')).toBe('1');
    expect(limited.headers.get('x-ratelimit-reset')).toBe(limited.headers.get('retry-after'));
    // One count per key across both endpoints.
    const account = await call('/v1.0/account', { headers: { 'X-API-Key': key } });
    expectError(account, 429, 'rate_limited', 'GET /v1.0/account');
    expect(Number(account.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(account.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(engine.calls).toBe(1);
  });

  it('answers 402 insufficient_credits when the balance is short', async () => {
    await start({ creditsPerImage: 11 });
    const response = await post(form());
    expectError(response, 402, 'insufficient_credits');
    expect(response.headers.get('x-ratelimit-limit')).toBe('60');
    expect(engine.calls).toBe(0);
    expect(await balance()).toBe(10);
  });

  it('answers 503 service_busy with Retry-After when the queue is full', async () => {
    await start({ maxQueue: 0, behaviour: { kind: 'gated' } });
    const first = post(form());
    await engine.started(1);
    const busy = await post(form());
    expect(busy.status).toBe(503);
    expect(errorOf(busy.body).code).toBe('service_busy');
    expect(Number(busy.headers.get('retry-after'))).toBeGreaterThan(0);
    engine.release();
    expect((await first).status).toBe(200);
  });

  it('answers 502 when the engine fails with an unclassified error, and 504 on timeout, refunding both', async () => {
    await start({ behaviour: { kind: 'fail', error: new Error('onnx exploded') } });
    const failed = await post(form(), { 'Idempotency-Key': 'job-1' });
    expectError(failed, 502, 'processing_failed');
    expect(await balance()).toBe(10);
    // The key of a failed request is spent: reusing it says so, and charges nothing.
    expectError(await post(form(), { 'Idempotency-Key': 'job-1' }), 409, 'idempotency_key_failed');
    expect(engine.calls).toBe(1);
    engine.behaviour = { kind: 'hang' };
    await server.close();
    await service.close();
    await start({ processingTimeoutMs: 200, behaviour: { kind: 'hang' } });
    const timedOut = await post(form());
    expect([timedOut.status, errorOf(timedOut.body).code]).toEqual([504, 'processing_timeout']);
    expect(await balance()).toBe(10);
  });

  it('aborts the service request when the client disconnects, which refunds it', async () => {
    await start({ behaviour: { kind: 'hang' } });
    // Settles when the engine's call has ended: the hanging call ends only when the service aborts it.
    const cutOut = engine.cutOut.bind(engine);
    const callEnded = new Promise<void>((resolve) => {
      engine.cutOut = (...args) => cutOut(...args).finally(resolve);
    });
    const controller = new AbortController();
    const pending = fetch(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      body: form(),
      headers: { 'X-API-Key': key },
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await engine.started(1);
    expect(engine.running).toBe(1);
    controller.abort();
    await pending;
    await callEnded;
    expect(engine.running).toBe(0);
    expect(await balance()).toBe(10);
  });

  it('finishes requests in flight on close, then refuses connections', async () => {
    await start({ behaviour: { kind: 'gated' } });
    const inFlight = post(form());
    await engine.started(1);
    const closed = server.close();
    setTimeout(() => engine.release(), 100);
    const response = await inFlight;
    await closed;
    expect(response.status).toBe(200);
    await expect(fetch(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } })).rejects.toThrow();
  });
});

// The real pipeline (decode, sizes, caps, formats, compositing) on the warm-key model, a 1×1 convolution that
// keeps a red disc and removes a light background in milliseconds: what a client sees of each format and size.
// The engine's own rules are in test/unit/engine/pipeline.test.ts; the real model's cut in
// test/e2e/serve-cutouts.test.ts.
describe('formats and sizes through the real pipeline', () => {
  let pipeline: Engine;
  beforeAll(async () => {
    pipeline = await createEngine({ model: warmKeyModel() });
  });
  afterAll(async () => {
    await pipeline?.close();
  });
  // Not the 5 s processing limit of the other tests: a 50 MP encode on a loaded machine takes longer, and no
  // limit is what these tests are about. Longer than a test may run, so the test's own timeout is the bound.
  beforeEach(() => start({ engine: pipeline, processingTimeoutMs: 600_000 }));

  /** A flat light background with a red disc: a clean foreground whose box is known. */
  function discImage(width: number, height: number, disc: { cx: number; cy: number; r: number }): Promise<Buffer> {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#dfe8f0"/><circle cx="${disc.cx}" cy="${disc.cy}" r="${disc.r}" fill="#c0392b"/></svg>`;
    return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
  }

  async function pixel(picture: Buffer, x: number, y: number): Promise<number[]> {
    const { data, info } = await sharp(picture).raw().toBuffer({ resolveWithObject: true });
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

  /** The result's size, checked against X-Width and X-Height. */
  async function dimensions(answer: Answer): Promise<{ width: number; height: number; format: string | undefined }> {
    expect(answer.status, answer.body.toString().slice(0, 300)).toBe(200);
    const meta = await sharp(answer.body).metadata();
    expect([String(meta.width), String(meta.height)]).toEqual([
      answer.headers.get('x-width'),
      answer.headers.get('x-height'),
    ]);
    return { width: meta.width ?? 0, height: meta.height ?? 0, format: meta.format };
  }

  it('format=jpg flattens transparency onto white and keeps the foreground', async () => {
    const disc = await discImage(400, 300, { cx: 200, cy: 150, r: 90 });
    const answer = await post(form({ format: 'jpg' }, disc));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('image/jpeg');
    const meta = await sharp(answer.body).metadata();
    expect([meta.format, meta.hasAlpha, meta.width, meta.height]).toEqual(['jpeg', false, 400, 300]);
    expectColour(await pixel(answer.body, 2, 2), [255, 255, 255], 6, 'corner');
    expectColour(await pixel(answer.body, 200, 150), [192, 57, 43], 12, 'centre');
  });

  it('format=auto gives JPG when bg_color makes the result opaque, and PNG when bg_color is translucent', async () => {
    const disc = await discImage(400, 300, { cx: 200, cy: 150, r: 90 });
    const opaque = await post(form({ bg_color: 'red' }, disc));
    expect(opaque.status).toBe(200);
    expect(opaque.headers.get('content-type')).toBe('image/jpeg');
    expect((await sharp(opaque.body).metadata()).format).toBe('jpeg');
    expectColour(await pixel(opaque.body, 2, 2), [255, 0, 0], 8, 'opaque corner');

    const translucent = await post(form({ bg_color: '#0000ff80' }, disc));
    expect(translucent.status).toBe(200);
    expect(translucent.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(translucent.body).metadata();
    expect([meta.format, meta.hasAlpha]).toEqual(['png', true]);
    expectColour(await pixel(translucent.body, 2, 2), [0, 0, 255, 128], 8, 'translucent corner');
    expect((await pixel(translucent.body, 200, 150))[3]).toBeGreaterThanOrEqual(250);
  });

  it('size=medium caps the result at 1.5 MP with the aspect kept; the foreground box is on the input canvas', async () => {
    const input = await discImage(2000, 1500, { cx: 1000, cy: 750, r: 400 });
    const answer = await post(form({ size: 'medium' }, input));
    const { width, height } = await dimensions(answer);
    expect(width * height).toBeLessThanOrEqual(1_500_000);
    expect(width * height).toBeGreaterThan(1_480_000);
    expect(Math.abs(width / height - 4 / 3)).toBeLessThan(0.01);
    // The disc spans 600..1400 x 350..1150 on the 2000x1500 input, not on the smaller result.
    const box = ['left', 'top', 'width', 'height'].map((side) => Number(answer.headers.get(`x-foreground-${side}`)));
    for (const [i, value] of box.entries())
      expect(Math.abs(value - [600, 350, 800, 800][i]!), `foreground ${box.join(',')}`).toBeLessThanOrEqual(20);
  });

  it('format=auto at size=50MP is capped at 10 MP even as an opaque JPG; format=jpg at size=auto is not, whatever the balance', async () => {
    const big = await discImage(4000, 3000, { cx: 2000, cy: 1500, r: 900 }); // 12 MP
    const auto = await dimensions(await post(form({ size: '50MP', bg_color: 'white' }, big)));
    expect(auto.format).toBe('jpeg');
    expect(auto.width * auto.height).toBeLessThanOrEqual(10_000_000);
    expect(auto.width * auto.height).toBeGreaterThan(9_950_000);
    // 9 credits left: size=auto does not size by the balance; the 12 MP input comes back whole.
    const jpg = await dimensions(await post(form({ size: 'auto', format: 'jpg' }, big)));
    expect([jpg.format, jpg.width, jpg.height]).toEqual(['jpeg', 4000, 3000]);
    expect(await balance()).toBe(8);
  });
});

describe('a connection after a bad request', () => {
  beforeEach(() => start());

  it('keeps serving after each bad request, on the same connection or a new one; then an image succeeds', async () => {
    const account = () => call('/v1.0/account', { headers: { 'X-API-Key': key } });
    const bad: Array<() => Promise<Answer>> = [
      () => post('{"image_url": ', { 'Content-Type': 'application/json' }),
      () =>
        post('--x\r\nContent-Disposition: form-data; name="size"\r\n\r\nhd', {
          'Content-Type': 'multipart/form-data; boundary=x',
        }),
      () => post('hello', { 'Content-Type': 'text/plain' }),
      () => post(form({ size: 'huge' })),
      () => post(form({}, Buffer.from('not an image at all'))),
      () => call('/v1.0/removebg', { method: 'DELETE' }),
    ];
    for (const request of bad) {
      expect((await request()).status).toBeGreaterThanOrEqual(400);
      expect((await account()).status).toBe(200);
    }
    expect((await post(form({ size: 'preview' }))).status).toBe(200);
    expect(await balance()).toBe(9);
  });

  it('skips a body sent with GET, and a body it refuses unread (415), instead of reading it as the next request', async () => {
    // The body looks like a request of its own: it must be skipped as body, never answered.
    const smuggled = 'GET /v1.0/smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    const get = await rawExchange(
      `GET /v1.0/account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}` +
        `GET /v1.0/account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
    );
    expect(statusLines(get)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
    expect(get).not.toContain('smuggled');
    expect(get.match(/"total":10,/g)).toHaveLength(2);

    const refused = await rawExchange(
      `POST /v1.0/removebg HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}` +
        `GET /v1.0/account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
    );
    expect(statusLines(refused)[0]).toBe('HTTP/1.1 415');
    expect(refused).not.toContain('smuggled');
    expect(
      statusLines(refused)
        .slice(1)
        .every((line) => line === 'HTTP/1.1 200'),
    ).toBe(true);
  });

  it('never drains an unread body at length: too large declared, or over 64 KiB and stalled, is answered with Connection: close and closed', async () => {
    const started = Date.now();
    const huge = await rawExchange(
      'POST /v1.0/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\nabc',
      30_000,
    );
    expect(statusLines(huge)).toEqual(['HTTP/1.1 404']);
    expect(huge).toMatch(/connection: close/i);
    const stalled = await rawExchange(
      'POST /v1.0/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc',
      30_000,
    );
    expect(statusLines(stalled)).toEqual(['HTTP/1.1 404']);
    expect(stalled).toMatch(/connection: close/i);
    // The server's own end, not the 30 s safety net above, closed both.
    expect(Date.now() - started).toBeLessThan(29_000);
  });
});

describe('kept-alive connections', () => {
  /** Blocks the event loop of this process, which runs the server, as the engine's synchronous inference does. */
  const blockEventLoop = (ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until);
  };

  it('answers a request sent on an idle kept-alive connection while the event loop stood still past the keep-alive timeout, instead of resetting it', async () => {
    await start();
    const url = new URL(server.url);
    const socket: Socket = connect(Number(url.port), url.hostname);
    let received = '';
    const answers = (n: number) => received.split('HTTP/1.1 ').length - 1 >= n && /\r\n\r\n\{.*\}$/s.test(received);
    const ended = new Promise<string>((resolve) => {
      socket.on('error', (error) => resolve(`error ${error.message}`));
      socket.on('close', () => resolve('closed'));
    });
    const receivedAnswers = (n: number) =>
      Promise.race([
        ended,
        new Promise<string>((resolve) => {
          const check = () => (answers(n) ? resolve('answered') : socket.once('data', check));
          check();
        }),
      ]);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const get = `GET /v1.0/account HTTP/1.1\r\nHost: ${url.host}\r\nX-API-Key: ${key}\r\n\r\n`;

    socket.write(get);
    expect(await receivedAnswers(1)).toBe('answered');
    // The server arms its keep-alive timer when its write of the answer completes: a turn of the loop after
    // the write, which can come after the client here has read it.
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    // The connection is idle and alive; the next request goes out on it, then the loop stands still past the
    // server's keep-alive timeout (an inference on a busy machine) with that request unread. Node arms the idle
    // timer at the keep-alive timeout plus a second.
    socket.write(get);
    blockEventLoop(KEEP_ALIVE_MS + 2000);
    expect(await receivedAnswers(2)).toBe('answered');
    expect(received.match(/HTTP\/1\.1 200 OK/g)).toHaveLength(2);
    socket.destroy();
  });
});

describe('internal text stays in the log', () => {
  const cases: Array<[string, unknown, number, string]> = [
    [
      'onnxruntime text',
      new Error(
        "onnxruntime: Non-zero status code returned while running Conv node. Name:'/stage1/conv' /opt/rmbg/models/isnet.onnx",
      ),
      502,
      'processing_failed',
    ],
    [
      'libvips text',
      new RmbgError(
        'corrupt_image',
        'the image could not be decoded (truncated or corrupt): VipsJpeg: Premature end of input file /tmp/rmbg-upload-1',
      ),
      400,
      'corrupt_image',
    ],
    [
      'a file path of io_error',
      new RmbgError('io_error', "EACCES: permission denied, open '/var/lib/rmbg/secret/rmbg.sqlite'"),
      500,
      'internal_error',
    ],
  ];
  for (const [label, error, status, code] of cases) {
    it(`answers ${label} with the table's stable detail; the log has the text and the request id`, async () => {
      await start({ behaviour: { kind: 'fail', error }, log: true });
      const failed = await post(form());
      const body = errorOf(failed.body);
      expect([failed.status, body.code]).toEqual([status, code]);
      expect(body.detail).toBe(ERRORS[code as keyof typeof ERRORS].detail);
      expect(failed.body.toString()).not.toMatch(/\/opt|\/tmp|\/var|onnxruntime|Vips/);
      const requestId = failed.headers.get('x-request-id') as string;
      const line = logged.find((entry) => entry.includes(requestId));
      expect(line).toBeDefined();
      expect(line).toContain((error as Error).message.slice(0, 40).replace(/'/g, "'"));
      expect(await balance()).toBe(10);
    });
  }
});

describe('the OpenAPI document declares what the server sends', () => {
  type Doc = {
    paths: Record<
      string,
      Record<string, { responses: Record<string, { $ref?: string; headers?: Record<string, unknown> }> }>
    >;
    components: { responses: Record<string, { headers?: Record<string, unknown> }> };
  };

  function declaredHeaders(doc: Doc, status: number): string[] {
    const response = doc.paths['/v1.0/removebg']!.post!.responses[String(status)];
    expect(response, `POST /v1.0/removebg declares ${status}`).toBeDefined();
    const resolved = response!.$ref ? doc.components.responses[response!.$ref.split('/').pop() as string] : response;
    return Object.keys(resolved?.headers ?? {}).map((name) => name.toLowerCase());
  }

  it('every API header of a 409 in progress, a 503 busy and a 429 is declared for its status (Retry-After included)', async () => {
    await start({ rateLimit: 3, maxQueue: 0, behaviour: { kind: 'gated' } });
    const running = post(form(), { 'Idempotency-Key': 'k1' });
    await engine.started(1);
    const answers = [await post(form(), { 'Idempotency-Key': 'k1' }), await post(form()), await post(form())];
    expect(answers.map((answer) => [answer.status, errorOf(answer.body).code])).toEqual([
      [409, 'idempotency_in_progress'],
      [503, 'service_busy'],
      [429, 'rate_limited'],
    ]);
    const doc = (await (await fetch(`${server.url}/v1.0/openapi.json`)).json()) as Doc;
    const apiHeaders = new Set(Object.values(HEADERS).map((name) => name.toLowerCase()));
    for (const answer of answers) {
      const sent = [...answer.headers.keys()].filter((name) => apiHeaders.has(name));
      expect(sent).toContain('retry-after');
      expect(declaredHeaders(doc, answer.status), `headers of ${answer.status}`).toEqual(expect.arrayContaining(sent));
    }
    engine.release();
    expect((await running).status).toBe(200);
  });
});

describe('GET /v1.0/account and /v1.0/openapi.json', () => {
  beforeEach(() => start());

  it('answers the account record: integers, total = subscription + payg, enterprise and free_calls 0, all sizes', async () => {
    await store.addCredits({ apiKey: key }, 3, 'subscription');
    const answer = await call('/v1.0/account', { headers: { 'X-API-Key': key } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.headers.get('x-request-id')).toMatch(UUID);
    expect(answer.headers.get('x-ratelimit-limit')).toBe('60');
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
      expect(answer.headers.get(name), name).toMatch(/^\d+$/);
    // The exact text: integers (13, not 13.0 or "13"), and no member beyond the spec's.
    expect(JSON.parse(answer.body.toString())).toStrictEqual({
      data: {
        attributes: {
          credits: { total: 13, subscription: 3, payg: 10, enterprise: 0 },
          api: { free_calls: 0, sizes: 'all' },
        },
      },
    });
    expect(answer.body.toString()).toContain('"total":13,"subscription":3,"payg":10,"enterprise":0');
  });

  it('serves an OpenAPI 3.1 document with every field, unsupported parameter and wire error code', async () => {
    const response = await fetch(`${server.url}/v1.0/openapi.json`);
    expect(response.status).toBe(200);
    const doc = (await response.json()) as {
      openapi: string;
      info: { version: string };
      paths: Record<string, unknown>;
      components: {
        schemas: Record<string, { properties: Record<string, unknown> }>;
        responses: Record<string, unknown>;
      };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1.0/removebg', '/v1.0/account']));
    const multipart = Object.keys(doc.components.schemas.RemoveRequest_multipart!.properties);
    const json = Object.keys(doc.components.schemas.RemoveRequest_json!.properties);
    for (const name of [...SOURCE_FIELDS, ...OPTION_FIELDS.map((f) => f.name), ...UNSUPPORTED_FIELDS])
      expect(multipart).toContain(name);
    expect(json).not.toContain('image_file');
    const text = JSON.stringify(doc);
    for (const code of [
      'insufficient_credits',
      'request_timeout',
      'idempotency_key_failed',
      'unsupported_content_type',
      'processing_timeout',
    ])
      expect(text).toContain(code);
    expect(text).not.toContain('usage_error');
    for (const status of [400, 402, 403, 408, 409, 415, 429, 502, 503, 504])
      expect(Object.keys(doc.components.responses)).toContain(`Error${status}`);
  });
});
