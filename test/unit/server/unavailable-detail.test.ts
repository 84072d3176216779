// 503 service_unavailable never hands the database's own text to a caller: the store's message (host, port,
// user name) goes to the log with the request id, the answer carries the error table's fixed detail. The
// store here fails as the PostgreSQL driver does when its database is unreachable (test/unit/server/
// ops-routes.test.ts shows the same on a real PostgreSQL).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ERRORS, RmbgError } from '../../../src/api/errors.js';
import { buildApp } from '../../../src/server/build-app.js';
import { createService, type Service } from '../../../src/service/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { testEngine, testImage, TEST_APP_LIMITS, TEST_SERVICE_LIMITS } from '../../helpers/sharp-test-engine.js';

const DATABASE_TEXT =
  'the database is unreachable (password authentication failed for user "rmbg_owner" at db.internal:5432); retry shortly';

let dir: string;
let store: Store;
let service: Service;
let app: FastifyInstance;
let key: string;
let down = false;
let logged: string[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-unavailable-'));
  store = await openStore(dir);
  key = (await store.createAccountWithKey({ plan: 'pro', credits: 10 })).key;
  down = false;
  // Every store call fails like the driver's "unreachable" once the database is down.
  const failing = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function' || name === 'close') return value;
      return (...args: unknown[]) => {
        if (down) return Promise.reject(new RmbgError('service_unavailable', DATABASE_TEXT, { retryAfterSeconds: 2 }));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  service = await createService({ store: failing, engine: testEngine(), ...TEST_SERVICE_LIMITS });
  logged = [];
  const logger = { level: 'warn', stream: { write: (line: string) => void logged.push(line) } };
  app = buildApp({ service, ...TEST_APP_LIMITS, logger });
});
afterEach(async () => {
  down = false;
  await app.close();
  await service.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

it("answers /readyz and the API with 503, Retry-After and the table's fixed detail; the database's text is only in the log, with the request id", async () => {
  const image = await testImage(64, 48);
  expect((await app.inject('/readyz')).statusCode).toBe(200);
  down = true;
  const answers = [
    await app.inject('/readyz'),
    await app.inject({
      method: 'POST',
      url: '/v1.0/removebg',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      payload: JSON.stringify({ image_file_b64: image.toString('base64') }),
    }),
    await app.inject({ url: '/v1.0/account', headers: { 'x-api-key': key } }),
    // A caller with no valid key learns nothing about the database either.
    await app.inject({ url: '/v1.0/account', headers: { 'x-api-key': 'rmbg_guess' } }),
  ];
  for (const answer of answers) {
    const error = (answer.json() as { errors: Array<{ code: string; detail: string }> }).errors[0]!;
    expect([answer.statusCode, error.code]).toEqual([503, 'service_unavailable']);
    expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
    expect(answer.body).not.toMatch(/rmbg_owner|db\.internal|5432|password/);
    expect(error.detail).toBe(ERRORS.service_unavailable.detail);
    const line = logged.find((entry) => entry.includes(answer.headers['x-request-id'] as string));
    expect(line).toContain('rmbg_owner');
  }
});
