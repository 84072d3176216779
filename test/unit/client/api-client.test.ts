// The client against a real HTTP server on 127.0.0.1 whose answers are scripted: what it sends,
// what it reads back, how it reports errors, and when it retries.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_OPTIONS, type RemoveOptions } from '../../../src/api/options.js';
import { createApiClient, type ApiClientOptions } from '../../../src/client/api-client.js';
import type { RetryInfo, RetryPolicy } from '../../../src/client/retry-policy.js';
import { rejectionOf } from '../../helpers/rejection.js';
import {
  apiError,
  createFaultServer,
  drop,
  hang,
  imageResult,
  json,
  makePng,
  proxy,
  respond,
  TIMEOUT_MS,
  type FaultServer,
  type FaultStep,
} from '../../helpers/fault-server.js';

const KEY = 'test-key-123';
const ACCOUNT = {
  data: {
    attributes: {
      credits: { total: 120, subscription: 100, payg: 20, enterprise: 0 },
      api: { free_calls: 0, sizes: 'all' },
    },
  },
};

let png: Buffer;
let input: Buffer;
let server: FaultServer | undefined;

beforeAll(async () => {
  png = await makePng(40, 30);
  input = await sharp({ create: { width: 50, height: 40, channels: 3, background: '#336699' } })
    .jpeg()
    .toBuffer();
});

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A fake clock whose sleeps return at once and advance it, recording every wait. */
function fakeTime(random = 1) {
  let now = 1_000_000;
  const slept: number[] = [];
  const retry: Partial<RetryPolicy> = {
    now: () => now,
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
    random: () => random,
  };
  return { retry, slept };
}

async function start(script: FaultStep[], clientOptions: Partial<ApiClientOptions> = {}, basePath = '') {
  server = await createFaultServer({ script });
  const retries: RetryInfo[] = [];
  const client = createApiClient({
    timeoutMs: TIMEOUT_MS,
    baseUrl: server.url + basePath,
    apiKey: KEY,
    onRetry: (info) => retries.push(info),
    ...clientOptions,
  });
  return { server, client, retries };
}

describe('postRemoveBg: request', () => {
  it('POSTs multipart with image_file and the option fields to {base}/v1.0/removebg, with X-API-Key and Idempotency-Key', async () => {
    const { server, client } = await start([imageResult(png, 40, 30)], {}, '/api');
    const options: RemoveOptions = {
      size: 'hd',
      format: 'png',
      crop: true,
      bgColor: { r: 255, g: 0, b: 128, alpha: 1 },
    };
    await client.postRemoveBg(input, options, { idempotencyKey: 'rmbg-abc', filename: 'photo.jpg' });

    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/api/v1.0/removebg');
    expect(request!.headers['x-api-key']).toBe(KEY);
    expect(request!.headers['idempotency-key']).toBe('rmbg-abc');
    expect(request!.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(request!.fields).toEqual({ size: 'hd', format: 'png', crop: 'true', bg_color: 'ff0080' });
    expect(request!.files.image_file!.data.equals(input)).toBe(true);
    expect(request!.files.image_file!.filename).toBe('photo.jpg');
    expect(request!.files.image_file!.mimeType).toBe('image/jpeg');
  });

  it('sends no Idempotency-Key when none is given, and does not double a base that ends in /v1.0', async () => {
    const { server, client } = await start([imageResult(png, 40, 30)], {}, '/v1.0/');
    await client.postRemoveBg(input, DEFAULT_OPTIONS);
    expect(server.requests[0]!.path).toBe('/v1.0/removebg');
    expect(server.requests[0]!.headers['idempotency-key']).toBeUndefined();
    expect(server.requests[0]!.fields).toEqual({ size: 'preview', format: 'auto', crop: 'false' });
  });

  it('refuses an invalid Idempotency-Key before sending anything', async () => {
    const { server, client } = await start([]);
    const error = await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS, { idempotencyKey: 'x'.repeat(129) }));
    expect(error.code).toBe('invalid_idempotency_key');
    expect(server.requests).toHaveLength(0);
  });
});

describe('postRemoveBg: result', () => {
  it('returns the image bytes and the values of the response headers', async () => {
    const { client } = await start([imageResult(png, 40, 30, { 'x-credits-charged': '3', 'x-request-id': 'req-77' })]);
    const result = await client.postRemoveBg(input, DEFAULT_OPTIONS);
    expect(result.data.equals(png)).toBe(true);
    const meta = await sharp(result.data).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 40, 30]);
    expect(result).toMatchObject({
      mimeType: 'image/png',
      width: 40,
      height: 30,
      creditsCharged: 3,
      requestId: 'req-77',
      replayed: false,
      foreground: { top: 10, left: 10, width: 20, height: 20 },
      rateLimit: { limit: 60, remaining: 59, resetSeconds: 42 },
    });
  });

  it('reports a replay, and leaves the optional headers undefined when absent', async () => {
    const { client } = await start([
      respond(200, {
        headers: {
          'content-type': 'image/png',
          'x-width': '40',
          'x-height': '30',
          'x-credits-charged': '1',
          'x-idempotent-replayed': 'true',
        },
        body: png,
      }),
    ]);
    const result = await client.postRemoveBg(input, DEFAULT_OPTIONS, { idempotencyKey: 'k1' });
    expect(result.replayed).toBe(true);
    expect(result.foreground).toBeUndefined();
    expect(result.confidence).toBeUndefined();
    expect(result.rateLimit).toBeUndefined();
    expect(result.requestId).toBe('');
  });

  it("reads rmbg's X-Confidence; a value that is not a number from 0 to 1 is no confidence, not 0", async () => {
    const values = ['0.731', '1', '0', '1.5', '-0.2', 'high', ''];
    const { client } = await start(values.map((value) => imageResult(png, 40, 30, { 'x-confidence': value })));
    const read: Array<number | undefined> = [];
    for (const _ of values) read.push((await client.postRemoveBg(input, DEFAULT_OPTIONS)).confidence);
    expect(read).toEqual([0.731, 1, 0, undefined, undefined, undefined, undefined]);
  });

  it('rejects a 200 that is not an image or lacks X-Width as upstream_error', async () => {
    const { client } = await start([
      json(200, { data: {} }),
      respond(200, { headers: { 'content-type': 'image/png', 'x-height': '30', 'x-credits-charged': '1' }, body: png }),
    ]);
    const notImage = await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS));
    expect(notImage.code).toBe('upstream_error');
    expect(notImage.message).toMatch(/application\/json' instead of an image/);
    const noWidth = await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS));
    expect(noWidth.code).toBe('upstream_error');
    expect(noWidth.message).toMatch(/X-Width/);
  });
});

describe('error mapping', () => {
  it('maps the spec error body to the catalogue code, keeping the server status and title', async () => {
    const { client } = await start([apiError(402, 'insufficient_credits', 'Not enough credits: 0 left, 1 needed')]);
    const error = await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS));
    expect(error.code).toBe('insufficient_credits');
    expect(error.status).toBe(402);
    expect(error.message).toBe('Not enough credits: 0 left, 1 needed');
  });

  it('prefers detail over title, and maps an unknown code to upstream_error with the status kept', async () => {
    const { client } = await start([
      json(400, {
        errors: [
          { title: 'Invalid option value', code: 'invalid_option', detail: "size must be one of …; got 'huge'" },
        ],
      }),
      json(418, { errors: [{ title: 'I am a teapot', code: 'teapot' }] }),
    ]);
    const detailed = await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS));
    expect([detailed.code, detailed.status, detailed.message]).toEqual([
      'invalid_option',
      400,
      "size must be one of …; got 'huge'",
    ]);
    const unknown = await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS));
    expect(unknown.code).toBe('upstream_error');
    expect(unknown.status).toBe(418);
    expect(unknown.message).toMatch(/I am a teapot.*teapot/);
  });

  it('maps a non-JSON error body to upstream_error with the status and a quote of the body', async () => {
    const { client } = await start([
      respond(502, { headers: { 'content-type': 'text/html' }, body: '<h1>Bad Gateway</h1>' }),
    ]);
    const error = await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS));
    expect(error.code).toBe('upstream_error');
    expect(error.status).toBe(502);
    expect(error.message).toMatch(/HTTP 502.*<h1>Bad Gateway<\/h1>/);
  });

  it('maps a refused connection to network_error', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const client = createApiClient({
      timeoutMs: TIMEOUT_MS,
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: KEY,
      retry: { maxAttempts: 1 },
    });
    const error = await rejectionOf(client.getAccount());
    expect(error.code).toBe('network_error');
    expect(error.message).toMatch(/ECONNREFUSED/);
  });

  it('keeps Retry-After and X-RateLimit-* of an error that is not retried', async () => {
    const { client } = await start([
      apiError(429, 'rate_limited', 'Too many requests', {
        'retry-after': '30',
        'x-ratelimit-limit': '60',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': '30',
      }),
    ]);
    const error = await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS));
    expect(error.code).toBe('rate_limited');
    expect(error.retryAfterSeconds).toBe(30);
    expect(error.rateLimit).toEqual({ limit: 60, remaining: 0, resetSeconds: 30 });
  });
});

describe('getAccount', () => {
  it('GETs {base}/v1.0/account with X-API-Key and returns the record', async () => {
    const { server, client } = await start([json(200, ACCOUNT)], {}, '/api/');
    expect(await client.getAccount()).toEqual(ACCOUNT);
    expect(server.requests[0]).toMatchObject({ method: 'GET', path: '/api/v1.0/account', bodySize: 0 });
    expect(server.requests[0]!.headers['x-api-key']).toBe(KEY);
  });

  it('rejects a record without the credit numbers as upstream_error', async () => {
    const { client } = await start([json(200, { data: { attributes: { credits: { total: '12' } } } })]);
    const error = await rejectionOf(client.getAccount());
    expect(error.code).toBe('upstream_error');
    expect(error.message).toMatch(/credits\.total/);
  });
});

describe('retries', () => {
  it('obeys Retry-After: 1 on a 429 (real time: the next request arrives at least 1 s later)', async () => {
    const { server, client, retries } = await start([
      apiError(429, 'rate_limited', 'slow down', { 'retry-after': '1' }),
      json(200, ACCOUNT),
    ]);
    expect(await client.getAccount()).toEqual(ACCOUNT);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.arrivedAt - server.requests[0]!.arrivedAt).toBeGreaterThanOrEqual(1000);
    expect(retries).toMatchObject([{ attempt: 1, delayMs: 1000, reason: 'HTTP 429 rate_limited' }]);
  });

  it('obeys Retry-After as an HTTP-date on a 503', async () => {
    const time = fakeTime();
    const now = Date.parse('2030-01-01T00:00:00Z');
    time.retry.now = () => now;
    const { client } = await start(
      [apiError(503, 'service_busy', 'busy', { 'retry-after': 'Tue, 01 Jan 2030 00:00:04 GMT' }), json(200, ACCOUNT)],
      { retry: time.retry },
    );
    await client.getAccount();
    expect(time.slept).toEqual([4000]);
  });

  it('backs off exponentially with full jitter on 500, 502, 503, 504, each wait capped', async () => {
    const time = fakeTime(0.5);
    const { server, client, retries } = await start(
      [
        apiError(500, 'internal_error'),
        apiError(502, 'processing_failed'),
        apiError(503, 'service_unavailable'),
        apiError(504, 'processing_timeout'),
        json(200, ACCOUNT),
      ],
      { retry: { ...time.retry, baseDelayMs: 400, maxDelayMs: 1000 } },
    );
    await client.getAccount();
    expect(server.requests).toHaveLength(5);
    // random 0.5 of min(1000, 400 * 2^n)
    expect(time.slept).toEqual([200, 400, 500, 500]);
    expect(retries.map((r) => r.reason)).toEqual([
      'HTTP 500 internal_error',
      'HTTP 502 processing_failed',
      'HTTP 503 service_unavailable',
      'HTTP 504 processing_timeout',
    ]);
  });

  it('does not retry a POST without Idempotency-Key, even on a transient error', async () => {
    for (const step of [
      apiError(503, 'service_busy', 'busy', { 'retry-after': '0' }),
      apiError(500, 'internal_error'),
      drop(),
    ]) {
      const time = fakeTime();
      const { server, client, retries } = await start([step, imageResult(png, 40, 30)], { retry: time.retry });
      await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS));
      expect(server.requests).toHaveLength(1);
      expect(retries).toHaveLength(0);
      await server.close();
    }
    server = undefined;
  });

  it('retries a POST with Idempotency-Key after a dropped connection and a 503, with the same key and image', async () => {
    const time = fakeTime();
    const { server, client, retries } = await start([drop(), apiError(503, 'service_busy'), imageResult(png, 40, 30)], {
      retry: time.retry,
    });
    const result = await client.postRemoveBg(input, DEFAULT_OPTIONS, { idempotencyKey: 'rmbg-same' });
    expect(result.data.equals(png)).toBe(true);
    expect(server.requests).toHaveLength(3);
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual(['rmbg-same', 'rmbg-same', 'rmbg-same']);
    expect(server.requests.every((r) => r.files.image_file?.data.equals(input))).toBe(true);
    expect(retries[0]!.reason).toMatch(/^network error/);
    expect(retries[1]!.reason).toBe('HTTP 503 service_busy');
  });

  it('waits and retries 409 idempotency_in_progress with the same key', async () => {
    const time = fakeTime();
    const { server, client } = await start(
      [apiError(409, 'idempotency_in_progress'), imageResult(png, 40, 30, { 'x-idempotent-replayed': 'true' })],
      {
        retry: time.retry,
      },
    );
    const result = await client.postRemoveBg(input, DEFAULT_OPTIONS, { idempotencyKey: 'rmbg-k' });
    expect(result.replayed).toBe(true);
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual(['rmbg-k', 'rmbg-k']);
    expect(time.slept).toEqual([500]);
  });

  it('answers "in progress" do not use up the attempts: a dropped connection after them is retried too', async () => {
    const time = fakeTime();
    const inProgress = Array.from({ length: 4 }, () => apiError(409, 'idempotency_in_progress'));
    const { server, client } = await start(
      [...inProgress, drop(), imageResult(png, 40, 30, { 'x-idempotent-replayed': 'true' })],
      {
        retry: { ...time.retry, maxAttempts: 5 },
      },
    );
    const result = await client.postRemoveBg(input, DEFAULT_OPTIONS, { idempotencyKey: 'rmbg-k' });
    expect(result.replayed).toBe(true);
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual(Array.from({ length: 6 }, () => 'rmbg-k'));
  });

  it.each([
    [400, 'invalid_option'],
    [402, 'insufficient_credits'],
    [403, 'invalid_api_key'],
    [409, 'idempotency_key_expired'],
    [409, 'idempotency_key_failed'],
    [415, 'unsupported_content_type'],
  ])('fails at once on HTTP %i %s, even with an Idempotency-Key', async (status, code) => {
    const time = fakeTime();
    const { server, client } = await start([apiError(status, code), imageResult(png, 40, 30)], { retry: time.retry });
    const error = await rejectionOf(client.postRemoveBg(input, DEFAULT_OPTIONS, { idempotencyKey: 'rmbg-k' }));
    expect([error.code, error.status]).toEqual([code, status]);
    expect(server.requests).toHaveLength(1);
    expect(time.slept).toEqual([]);
  });

  it('stops at the attempt bound and says how many attempts were made', async () => {
    const time = fakeTime();
    const { server, client } = await start(
      Array.from({ length: 6 }, () => apiError(500, 'internal_error', 'boom')),
      {
        retry: { ...time.retry, maxAttempts: 3 },
      },
    );
    const error = await rejectionOf(client.getAccount());
    expect(server.requests).toHaveLength(3);
    expect([error.code, error.status]).toEqual(['internal_error', 500]);
    expect(error.message).toBe('boom (after 3 attempts)');
  });

  it('stops when the next wait would cross the total-time bound', async () => {
    const time = fakeTime(1);
    const { server, client } = await start(
      Array.from({ length: 6 }, () => apiError(503, 'service_busy')),
      {
        retry: { ...time.retry, baseDelayMs: 1000, maxDelayMs: 60_000, maxTotalMs: 2500 },
      },
    );
    await rejectionOf(client.getAccount());
    // waits 1000 (elapsed 1000), then 2000 would reach 3000 > 2500
    expect(time.slept).toEqual([1000]);
    expect(server.requests).toHaveLength(2);
  });

  it('does not wait for a Retry-After beyond the cap: the error carries it to the caller', async () => {
    const time = fakeTime();
    const { server, client } = await start(
      [apiError(429, 'rate_limited', 'later', { 'retry-after': '3600' }), json(200, ACCOUNT)],
      {
        retry: { ...time.retry, maxRetryAfterMs: 60_000 },
      },
    );
    const error = await rejectionOf(client.getAccount());
    expect(error.retryAfterSeconds).toBe(3600);
    expect(server.requests).toHaveLength(1);
    expect(time.slept).toEqual([]);
  });
});

describe('timeouts and cancellation', () => {
  it('gives up on a server that does not answer within timeoutMs', async () => {
    const { client } = await start([hang()], { timeoutMs: 300, retry: { maxAttempts: 1 } });
    const started = Date.now();
    const error = await rejectionOf(client.getAccount());
    const elapsed = Date.now() - started;
    expect(error.code).toBe('network_error');
    expect(error.message).toMatch(/within 0\.3 s/);
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(3000);
  });

  it('retries a timed-out POST that has an Idempotency-Key', async () => {
    const time = fakeTime();
    const { server, client, retries } = await start([hang(), imageResult(png, 40, 30)], {
      timeoutMs: 300,
      retry: { sleep: time.retry.sleep },
    });
    const result = await client.postRemoveBg(input, DEFAULT_OPTIONS, { idempotencyKey: 'rmbg-t' });
    expect(result.width).toBe(40);
    expect(server.requests).toHaveLength(2);
    expect(retries[0]!.reason).toBe('network error ETIMEDOUT');
  });

  it('stops at once, without retrying, when the caller cancels', async () => {
    const { server, client } = await start([hang(), json(200, ACCOUNT)]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const error = await rejectionOf(client.getAccount({ signal: controller.signal }));
    expect(error.code).toBe('interrupted');
    expect(server.requests).toHaveLength(1);
  });

  it('stops waiting for a Retry-After when the caller cancels', async () => {
    const { server, client } = await start([
      apiError(503, 'service_busy', 'busy', { 'retry-after': '30' }),
      json(200, ACCOUNT),
    ]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const started = Date.now();
    const error = await rejectionOf(client.getAccount({ signal: controller.signal }));
    expect(error.code).toBe('interrupted');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(server.requests).toHaveLength(1);
  });
});

describe('through the fault server as a transparent proxy', () => {
  it('forwards to the real upstream after the scripted faults, keeping path, headers and body', async () => {
    const upstream = await createFaultServer({
      script: [imageResult(png, 40, 30, { 'x-request-id': 'from-upstream' })],
    });
    try {
      const time = fakeTime();
      server = await createFaultServer({
        upstream: `${upstream.url}/base`,
        script: [apiError(503, 'service_busy'), proxy()],
      });
      const viaProxy = createApiClient({ timeoutMs: TIMEOUT_MS, baseUrl: server.url, apiKey: KEY, retry: time.retry });
      const result = await viaProxy.postRemoveBg(input, DEFAULT_OPTIONS, { idempotencyKey: 'rmbg-p' });
      expect(result.requestId).toBe('from-upstream');
      expect(result.data.equals(png)).toBe(true);
      expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual(['rmbg-p', 'rmbg-p']);
      expect(upstream.requests).toHaveLength(1);
      expect(upstream.requests[0]!.path).toBe('/base/v1.0/removebg');
      expect(upstream.requests[0]!.headers['idempotency-key']).toBe('rmbg-p');
      expect(upstream.requests[0]!.files.image_file!.data.equals(input)).toBe(true);
    } finally {
      await upstream.close();
    }
  });
});
