// The HTTP contract of spec/api-spec.md, POST /v1.0/removebg (test/helpers/http-contract-server.ts: a real port,
// the real service, real SQLite): the success answers and their headers, idempotent replay, and limits and load
// (408, 429, 402, 503, 502/504 with refunds, client disconnects, closing with requests in flight).

import sharp from 'sharp';
import { beforeEach, describe, expect, it } from 'vitest';
import { expectError, jsonResultOf } from '../../helpers/api-answers.js';
import { TEST_ENGINE_CONFIDENCE, testImage } from '../../helpers/sharp-test-engine.js';
import * as http from '../../helpers/http-contract-server.js';

http.useContractServer();

describe('success', () => {
  beforeEach(() => http.start());

  it('answers image bytes with every header as a string, and no replay header', async () => {
    const response = await http.post(http.form({ size: 'preview' }));
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
    expect(response.headers.get('x-confidence')).toBe(String(TEST_ENGINE_CONFIDENCE));
    expect(response.headers.get('x-ratelimit-limit')).toBe('60');
    expect(response.headers.get('x-ratelimit-remaining')).toBe('59');
    expect(Number(response.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers.get('x-idempotent-replayed')).toBeNull();
    expect(response.headers.get('content-length')).toBe(String(response.body.length));
    expect(await http.balance()).toBe(9);
  });

  it('answers exactly the spec JSON object with Accept: application/json, the confidence in its header', async () => {
    const response = await http.post(JSON.stringify({ image_file_b64: http.image.toString('base64') }), {
      'Content-Type': 'application/json',
      Accept: 'application/json',
    });
    // The spec's fields and no other (jsonResultOf reads them from the spec): rmbg's extension is a header.
    const data = jsonResultOf(response);
    expect(response.headers.get('x-confidence')).toBe(String(TEST_ENGINE_CONFIDENCE));
    expect(data).toEqual({
      result_b64: expect.any(String),
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
      const response = await http.post(http.form(), { Accept: accept });
      expect(response.headers.get('content-type'), accept).toBe('image/png');
    }
  });

  it('accepts urlencoded bodies, and image_file_b64 as a multipart field', async () => {
    const body = new URLSearchParams({ image_file_b64: http.image.toString('base64'), crop: 'false' }).toString();
    const response = await http.post(body, { 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-width')).toBe('64');
    const b64 = await http.post(http.form({ image_file_b64: http.image.toString('base64'), size: 'small' }, null));
    expect(b64.status).toBe(200);
    expect(b64.headers.get('x-width')).toBe('64');
    expect(await http.balance()).toBe(8);
  });
});

describe('idempotent replay', () => {
  it('answers 409 while the first request runs, then replays it byte for byte and header for header, charged once', async () => {
    await http.start({ behaviour: { kind: 'gated' } });
    const idem = { 'Idempotency-Key': 'order-17' };
    const running = http.post(http.form({ size: 'preview' }), idem);
    await http.engine.started(1);
    const during = await http.post(http.form({ size: 'preview' }), idem);
    expectError(during, 409, 'idempotency_in_progress');
    expect(during.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    http.engine.release();
    const first = await running;
    expect(first.status).toBe(200);
    expect(first.headers.get('x-idempotent-replayed')).toBeNull();
    expect(await http.balance()).toBe(9);

    const again = await http.post(http.form({ size: 'preview' }), idem);
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
    const stable = (answer: http.Answer) =>
      Object.fromEntries([...answer.headers].filter(([name]) => !varying.has(name)));
    expect(stable(again)).toEqual(stable(first));
    expect(http.engine.calls).toBe(1);
    expect(await http.balance()).toBe(9);

    // The same bytes as base64 in JSON are the same request: replayed, here as the JSON result.
    const asJson = await http.post(JSON.stringify({ image_file_b64: http.image.toString('base64'), size: 'preview' }), {
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
    expectError(
      await http.post(http.form({ size: 'preview' }, other), idem),
      409,
      'idempotency_key_mismatch',
      'other image',
    );
    expectError(await http.post(http.form({ size: 'medium' }), idem), 409, 'idempotency_key_mismatch', 'other size');
    expectError(
      await http.post(http.form({ size: 'preview', bg_color: 'white' }), idem),
      409,
      'idempotency_key_mismatch',
      'other bg_color',
    );
    expect(await http.balance()).toBe(9);

    // Keys are per account: another account's request under the same key is its own (here: refused for credits).
    const stranger = (await http.store.createAccountWithKey({ plan: 'pro', credits: 0 })).key;
    expectError(
      await http.post(http.form({ size: 'preview' }), { ...idem, 'X-API-Key': stranger }),
      402,
      'insufficient_credits',
      'other account',
    );
    expect(http.engine.calls).toBe(1);
  });

  it('accepts an Idempotency-Key of 128 characters and refuses 129 or a space with 400 invalid_idempotency_key', async () => {
    await http.start();
    // With no credits, getting as far as 402 shows the key itself was accepted.
    const broke = (await http.store.createAccountWithKey({ plan: 'pro', credits: 0 })).key;
    expectError(
      await http.post(http.form(), { 'Idempotency-Key': 'k'.repeat(128), 'X-API-Key': broke }),
      402,
      'insufficient_credits',
      '128 characters',
    );
    const tooLong = await http.post(http.form(), { 'Idempotency-Key': 'k'.repeat(129) });
    expectError(tooLong, 400, 'invalid_idempotency_key', '129 characters');
    expect(tooLong.headers.get('x-ratelimit-limit')).toBe('60');
    expectError(
      await http.post(http.form(), { 'Idempotency-Key': 'two words' }),
      400,
      'invalid_idempotency_key',
      'a space',
    );
    expect(await http.balance()).toBe(10);
  });
});

describe('limits and load', () => {
  it('answers a stalled body with 408 request_timeout after the body timeout', async () => {
    await http.start({ bodyTimeoutMs: 300 });
    const started = Date.now();
    const answer = await http.rawExchange(
      `POST /v1.0/removebg HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${http.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"image_url":`,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(answer).toMatch(/x-request-id: [0-9a-f-]{36}/i);
    expect(answer).toMatch(/connection: close/i);
    expect(answer).toContain('"code":"request_timeout"');
    expect((await http.post(http.form())).status).toBe(200);
  });

  it('answers 429 with Retry-After and rate-limit headers', async () => {
    await http.start({ rateLimit: 1 });
    expect((await http.post(http.form())).status).toBe(200);
    const limited = await http.post(http.form());
    expect(limited.status).toBe(429);
    expect(http.errorOf(limited.body).code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(limited.headers.get('x-ratelimit-limit')).toBe('1');
    expect(limited.headers.get('x-ratelimit-reset')).toBe(limited.headers.get('retry-after'));
    // One count per key across both endpoints.
    const account = await http.call('/v1.0/account', { headers: { 'X-API-Key': http.key } });
    expectError(account, 429, 'rate_limited', 'GET /v1.0/account');
    expect(Number(account.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(account.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(http.engine.calls).toBe(1);
  });

  it('answers 402 insufficient_credits when the balance is short', async () => {
    await http.start({ creditsPerImage: 11 });
    const response = await http.post(http.form());
    expectError(response, 402, 'insufficient_credits');
    expect(response.headers.get('x-ratelimit-limit')).toBe('60');
    expect(http.engine.calls).toBe(0);
    expect(await http.balance()).toBe(10);
  });

  it('answers 503 service_busy with Retry-After when the queue is full', async () => {
    await http.start({ maxQueue: 0, behaviour: { kind: 'gated' } });
    const first = http.post(http.form());
    await http.engine.started(1);
    const busy = await http.post(http.form());
    expect(busy.status).toBe(503);
    expect(http.errorOf(busy.body).code).toBe('service_busy');
    expect(Number(busy.headers.get('retry-after'))).toBeGreaterThan(0);
    http.engine.release();
    expect((await first).status).toBe(200);
  });

  it('answers 502 when the engine fails with an unclassified error, and 504 on timeout, refunding both', async () => {
    await http.start({ behaviour: { kind: 'fail', error: new Error('onnx exploded') } });
    const failed = await http.post(http.form(), { 'Idempotency-Key': 'job-1' });
    expectError(failed, 502, 'processing_failed');
    expect(await http.balance()).toBe(10);
    // The key of a failed request is spent: reusing it says so, and charges nothing.
    expectError(await http.post(http.form(), { 'Idempotency-Key': 'job-1' }), 409, 'idempotency_key_failed');
    expect(http.engine.calls).toBe(1);
    http.engine.behaviour = { kind: 'hang' };
    await http.server.close();
    await http.service.close();
    await http.start({ processingTimeoutMs: 200, behaviour: { kind: 'hang' } });
    const timedOut = await http.post(http.form());
    expect([timedOut.status, http.errorOf(timedOut.body).code]).toEqual([504, 'processing_timeout']);
    expect(await http.balance()).toBe(10);
  });

  it('aborts the service request when the client disconnects, which refunds it', async () => {
    await http.start({ behaviour: { kind: 'hang' } });
    // Settles when the engine's call has ended: the hanging call ends only when the service aborts it.
    const cutOut = http.engine.cutOut.bind(http.engine);
    const callEnded = new Promise<void>((resolve) => {
      http.engine.cutOut = (...args) => cutOut(...args).finally(resolve);
    });
    const controller = new AbortController();
    const pending = fetch(`${http.server.url}/v1.0/removebg`, {
      method: 'POST',
      body: http.form(),
      headers: { 'X-API-Key': http.key },
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await http.engine.started(1);
    expect(http.engine.running).toBe(1);
    controller.abort();
    await pending;
    await callEnded;
    expect(http.engine.running).toBe(0);
    expect(await http.balance()).toBe(10);
  });

  it('finishes requests in flight on close, then refuses connections', async () => {
    await http.start({ behaviour: { kind: 'gated' } });
    const inFlight = http.post(http.form());
    await http.engine.started(1);
    const closed = http.server.close();
    setTimeout(() => http.engine.release(), 100);
    const response = await inFlight;
    await closed;
    expect(response.status).toBe(200);
    await expect(fetch(`${http.server.url}/v1.0/account`, { headers: { 'X-API-Key': http.key } })).rejects.toThrow();
  });
});
