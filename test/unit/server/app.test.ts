// The HTTP adapter on a real port of 127.0.0.1, over the real service and a real SQLite store, with the
// service tests' sharp-backed engine (fast, and able to hang or wait): status codes, headers and bodies
// as a client sees them, timeouts, disconnects and shutdown.

import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ERRORS, RmbgError } from '../../../src/api/errors.js';
import { HEADERS } from '../../../src/api/response-headers.js';
import { OPTION_FIELDS, SOURCE_FIELDS, UNSUPPORTED_FIELDS } from '../../../src/api/options.js';
import { MAX_BODY_BYTES } from '../../../src/api/request-limits.js';
import { KEEP_ALIVE_MS } from '../../../src/server/build-app.js';
import { startServer, type RunningServer } from '../../../src/server/start-server.js';
import { createService, type Service, type ServiceDeps } from '../../../src/service/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
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

async function post(body: FormData | string, headers: Record<string, string> = {}) {
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
    expect(await balance()).toBe(9);
  });

  it('answers exactly the spec JSON object with Accept: application/json', async () => {
    const response = await post(JSON.stringify({ image_file_b64: image.toString('base64') }), {
      'Content-Type': 'application/json',
      Accept: 'application/json',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const json = JSON.parse(response.body.toString()) as { data: Record<string, unknown> };
    expect(Object.keys(json)).toEqual(['data']);
    expect(Object.keys(json.data).sort()).toEqual(
      [
        'credits_charged',
        'foreground_height',
        'foreground_left',
        'foreground_top',
        'foreground_width',
        'result_b64',
        'result_height',
        'result_width',
      ].sort(),
    );
    expect(json.data).toMatchObject({
      result_width: 64,
      result_height: 48,
      credits_charged: 1,
      foreground_top: 1,
      foreground_left: 2,
      foreground_width: 62,
      foreground_height: 47,
    });
    const meta = await sharp(Buffer.from(json.data.result_b64 as string, 'base64')).metadata();
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

  it('accepts urlencoded bodies', async () => {
    const body = new URLSearchParams({ image_file_b64: image.toString('base64'), crop: 'false' }).toString();
    const response = await post(body, { 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-width')).toBe('64');
  });

  it('replays an idempotent request byte for byte, with X-Idempotent-Replayed and the original request id', async () => {
    const first = await post(form(), { 'Idempotency-Key': 'order-17' });
    const again = await post(form(), { 'Idempotency-Key': 'order-17' });
    expect(again.status).toBe(200);
    expect(again.body.equals(first.body)).toBe(true);
    expect(again.headers.get('x-idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-credits-charged')).toBe('1');
    expect(again.headers.get('x-request-id')).toBe(first.headers.get('x-request-id'));
    expect(await balance()).toBe(9);
  });
});

describe('errors', () => {
  beforeEach(() => start());

  it('answers other content types with 415 and the error body, and keeps serving', async () => {
    for (const contentType of ['text/plain', 'application/octet-stream', 'image/jpeg']) {
      const response = await post('hello', { 'Content-Type': contentType });
      expect(response.status, contentType).toBe(415);
      expect(errorOf(response.body)).toMatchObject({
        code: 'unsupported_content_type',
        title: ERRORS.unsupported_content_type.title,
      });
      expect(response.headers.get('x-request-id')).toBeTruthy();
    }
    const missing = await request(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      body: 'hello',
      headers: { 'x-api-key': key },
    });
    expect(missing.statusCode).toBe(415);
    expect(errorOf(Buffer.from(await missing.body.arrayBuffer())).code).toBe('unsupported_content_type');
    expect((await post(form())).status).toBe(200);
  });

  it('answers malformed JSON with 400 invalid_request, not a framework error', async () => {
    const response = await post('{"image_url": ', { 'Content-Type': 'application/json' });
    expect(response.status).toBe(400);
    expect(errorOf(response.body).code).toBe('invalid_request');
  });

  it('answers parsing and schema errors with 400 and their codes', async () => {
    expect(errorOf((await post(form({}, null))).body).code).toBe('missing_image_source');
    expect(errorOf((await post(form({ image_url: 'https://example.com/a.png' }))).body).code).toBe(
      'multiple_image_sources',
    );
    expect(errorOf((await post(form({ shadow: '1' }))).body).code).toBe('unsupported_parameter');
    expect(errorOf((await post(form({ colour: 'red' }))).body).code).toBe('unknown_field');
    const b64 = await post(JSON.stringify({ image_file_b64: `data:image/jpeg;base64,${image.toString('base64')}` }), {
      'Content-Type': 'application/json',
    });
    expect([b64.status, errorOf(b64.body).code]).toEqual([400, 'invalid_base64']);
    expect(await balance()).toBe(10);
  });

  it('answers authentication failures with 403', async () => {
    const missing = await fetch(`${server.url}/v1.0/removebg`, { method: 'POST', body: form() });
    expect(missing.status).toBe(403);
    expect(errorOf(Buffer.from(await missing.arrayBuffer())).code).toBe('missing_api_key');
    const wrong = await post(form(), { 'X-API-Key': 'rmbg_not_a_key' });
    expect([wrong.status, errorOf(wrong.body).code]).toEqual([403, 'invalid_api_key']);
    const account = await fetch(`${server.url}/v1.0/account`);
    expect(account.status).toBe(403);
    expect(account.headers.get('x-request-id')).toBeTruthy();
  });

  it('answers unknown paths with 404 and wrong methods with 405 and Allow', async () => {
    const missing = await fetch(`${server.url}/v1.0/nothing`);
    expect(missing.status).toBe(404);
    expect(errorOf(Buffer.from(await missing.arrayBuffer())).code).toBe('not_found');
    const wrong = await fetch(`${server.url}/v1.0/removebg`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(errorOf(Buffer.from(await wrong.arrayBuffer())).code).toBe('method_not_allowed');
    const account = await fetch(`${server.url}/v1.0/account`, { method: 'DELETE' });
    expect([account.status, account.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
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

  it('answers a wrong Idempotency-Key with 400', async () => {
    const response = await post(form(), { 'Idempotency-Key': 'x'.repeat(129) });
    expect([response.status, errorOf(response.body).code]).toEqual([400, 'invalid_idempotency_key']);
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
    expect(answer).toMatch(/connection: close/i);
    expect(answer).toContain('"code":"request_timeout"');
    expect((await post(form())).status).toBe(200);
  });

  it('answers 429 with Retry-After and rate-limit headers', async () => {
    await start({ rateLimitPerMinute: 1 });
    expect((await post(form())).status).toBe(200);
    const limited = await post(form());
    expect(limited.status).toBe(429);
    expect(errorOf(limited.body).code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(limited.headers.get('x-ratelimit-limit')).toBe('1');
  });

  it('answers 402 insufficient_credits when the balance is short', async () => {
    await start({ creditsPerImage: 11 });
    const response = await post(form());
    expect([response.status, errorOf(response.body).code]).toEqual([402, 'insufficient_credits']);
    expect(response.headers.get('x-ratelimit-limit')).toBe('60');
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
    const failed = await post(form());
    expect([failed.status, errorOf(failed.body).code]).toEqual([502, 'processing_failed']);
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
    for (let i = 0; i < 50 && engine.running > 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
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
    await start({ rateLimitPerMinute: 3, maxQueue: 0, behaviour: { kind: 'gated' } });
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

  it('answers the account record with rate-limit headers', async () => {
    const response = await fetch(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      data: {
        attributes: {
          credits: { total: 10, subscription: 0, payg: 10, enterprise: 0 },
          api: { free_calls: 0, sizes: 'all' },
        },
      },
    });
    expect(response.headers.get('x-ratelimit-limit')).toBe('60');
    expect(response.headers.get('x-request-id')).toBeTruthy();
  });

  it('serves an OpenAPI 3.1 document with every field, unsupported parameter and wire error code', async () => {
    const response = await fetch(`${server.url}/v1.0/openapi.json`);
    expect(response.status).toBe(200);
    const doc = (await response.json()) as {
      openapi: string;
      info: { version: string };
      components: {
        schemas: Record<string, { properties: Record<string, unknown> }>;
        responses: Record<string, unknown>;
      };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
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
