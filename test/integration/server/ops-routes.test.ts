// /healthz, /readyz and /metrics over the real service on a real PostgreSQL store: readiness follows the
// database (503 with Retry-After while it is gone, never a 500), the API answers 503 too, and metrics count
// what the service did and are served to this machine only unless a token is configured.

import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ERRORS } from '../../../src/api/errors.js';
import { buildApp } from '../../../src/server/build-app.js';
import { createMetrics } from '../../../src/server/metrics.js';
import { createService, type Service } from '../../../src/service/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { freshDatabase, pgRows } from '../../helpers/postgres.js';
import { testEngine, testImage, TEST_APP_LIMITS, TEST_SERVICE_LIMITS } from '../../helpers/sharp-test-engine.js';

let url: string;
let store: Store;
let service: Service;
let app: FastifyInstance;
let key: string;

/** Lines the server logged (level warn and up). */
let logged: string[] = [];

async function start(metricsToken?: string): Promise<void> {
  const metrics = createMetrics();
  service = await createService({ store, engine: testEngine(), ...TEST_SERVICE_LIMITS, observer: metrics.observer });
  metrics.status = () => service.status();
  logged = [];
  const logger = { level: 'warn', stream: { write: (line: string) => void logged.push(line) } };
  app = buildApp({
    service,
    ...TEST_APP_LIMITS,
    metrics,
    metricsToken,
    logger,
  });
}

beforeEach(async () => {
  url = await freshDatabase();
  store = await openStore({ engine: 'postgres', url });
  key = (await store.createAccountWithKey({ plan: 'pro', credits: 5 })).key;
});
afterEach(async () => {
  await app?.close();
  await service?.close();
  await store.close();
});

async function removeBackground() {
  const boundary = randomUUID();
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="image_file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
    ),
    await testImage(64, 48),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return app.inject({
    method: 'POST',
    url: '/v1.0/removebg',
    headers: { 'x-api-key': key, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
  });
}

describe('health and readiness', () => {
  it('/healthz and /readyz answer 200 while the database is there; without it /readyz and the API are 503 with Retry-After', async () => {
    await start();
    expect((await app.inject('/healthz')).statusCode).toBe(200);
    expect((await app.inject('/readyz')).json()).toEqual({ status: 'ready' });
    expect((await removeBackground()).statusCode).toBe(200);

    // The database goes away under the running server.
    const name = new URL(url).pathname.slice(1);
    await pgRows(url.replace(/\/[^/]+$/, '/postgres'), `DROP DATABASE ${name} WITH (FORCE)`);
    const ready = await app.inject('/readyz');
    expect([ready.statusCode, ready.json().errors[0].code]).toEqual([503, 'service_unavailable']);
    expect(Number(ready.headers['retry-after'])).toBeGreaterThan(0);
    for (const answer of [
      await removeBackground(),
      await app.inject({ url: '/v1.0/account', headers: { 'x-api-key': key } }),
    ]) {
      expect([answer.statusCode, answer.json().errors[0].code]).toEqual([503, 'service_unavailable']);
      expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
    }
    expect((await app.inject('/healthz')).statusCode).toBe(200);
  });

  it("a 503 and /readyz send the error table's fixed detail, never the database's text; the log has it with the request id", async () => {
    await start();
    const name = new URL(url).pathname.slice(1);
    await pgRows(url.replace(/\/[^/]+$/, '/postgres'), `DROP DATABASE ${name} WITH (FORCE)`);
    const answers = [
      await app.inject('/readyz'),
      await removeBackground(),
      await app.inject({ url: '/v1.0/account', headers: { 'x-api-key': key } }),
      // No valid key: a caller who proves nothing learns nothing about the database either.
      await app.inject({ url: '/v1.0/account', headers: { 'x-api-key': 'rmbg_guess' } }),
    ];
    for (const answer of answers) {
      expect([answer.statusCode, answer.json().errors[0].code]).toEqual([503, 'service_unavailable']);
      expect(answer.body).not.toContain(name);
      expect(answer.body).not.toMatch(/database|ECONNREFUSED|postgres/i);
      expect(answer.json().errors[0].detail).toBe(ERRORS.service_unavailable.detail);
      const requestId = answer.headers['x-request-id'] as string;
      const line = logged.find((entry) => entry.includes(requestId));
      expect(line).toBeDefined();
      expect(line).toContain(name);
    }
  });
});

describe('metrics', () => {
  it('count requests by route and status, credits charged, inference time; read from loopback only', async () => {
    await start();
    expect((await removeBackground()).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1.0/account', headers: { 'x-api-key': 'rmbg_wrong' } })).statusCode).toBe(403);
    const scrape = await app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' });
    expect(scrape.statusCode).toBe(200);
    expect(scrape.headers['content-type']).toMatch(/^text\/plain/);
    const text = scrape.body;
    expect(text).toMatch(/rmbg_http_requests_total\{route="\/v1.0\/removebg",method="POST",status="200"\} 1/);
    expect(text).toMatch(/rmbg_http_requests_total\{route="\/v1.0\/account",method="GET",status="403"\} 1/);
    expect(text).toMatch(/rmbg_credits_charged_total 1/);
    expect(text).toMatch(/rmbg_credits_refunded_total 0/);
    expect(text).toMatch(/rmbg_inference_seconds_count 1/);
    expect(text).toMatch(/rmbg_http_request_duration_seconds_bucket\{le="\+Inf",route="\/v1.0\/removebg"\} 1/);
    expect(text).toMatch(/rmbg_queue_depth 0/);
    expect(text).toMatch(/rmbg_leases_expired_total 0/);
    for (const remoteAddress of ['10.1.2.3', '::ffff:192.168.1.5']) {
      const refused = await app.inject({ url: '/metrics', remoteAddress });
      expect([refused.statusCode, refused.json().errors[0].code]).toEqual([404, 'not_found']);
    }
    expect((await app.inject({ url: '/metrics', remoteAddress: '::1' })).statusCode).toBe(200);
  });

  it('with --metrics-token: any address with the bearer token, nobody without it (loopback included)', async () => {
    await start('s3cret-token');
    expect(
      (
        await app.inject({
          url: '/metrics',
          remoteAddress: '10.1.2.3',
          headers: { authorization: 'Bearer s3cret-token' },
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await app.inject({
          url: '/metrics',
          remoteAddress: '10.1.2.3',
          headers: { authorization: 'Bearer s3cret-tokex' },
        })
      ).statusCode,
    ).toBe(404);
    expect((await app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode).toBe(404);
  });
});
