// The processing deadline counts the wait for the engine: a request queued behind an image that never
// finishes gets 504 processing_timeout once its own limit is up, and its credit back, instead of waiting
// (charged, its lease renewed) until the engine frees. Real service and SQLite store, a gated test engine.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { buildApp } from '../../../src/server/build-app.js';
import { createService, type Service } from '../../../src/service/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
import {
  testEngine,
  testImage,
  type TestEngine,
  TEST_APP_LIMITS,
  TEST_SERVICE_LIMITS,
} from '../../helpers/sharp-test-engine.js';

let dir: string;
let store: Store;
let engine: TestEngine;
let service: Service;
let app: FastifyInstance;
let key: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-engine-wait-'));
  store = await openStore(dir);
  key = (await store.createAccountWithKey({ plan: 'pro', credits: 10 })).key;
  // Gated: the engine ignores its abort signal, as a stuck native call would.
  engine = testEngine({ kind: 'gated' });
  service = await createService({ store, engine, ...TEST_SERVICE_LIMITS, processingTimeoutMs: 400 });
  app = buildApp({ service, ...TEST_APP_LIMITS });
});
afterEach(async () => {
  engine.release();
  await app.close();
  await service.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function post(image: Buffer) {
  const response = await app.inject({
    method: 'POST',
    url: '/v1.0/removebg',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    payload: JSON.stringify({ image_file_b64: image.toString('base64') }),
  });
  return {
    status: response.statusCode,
    error: (response.json() as { errors: Array<{ code: string; detail: string }> }).errors[0]!,
  };
}

async function balance(): Promise<number> {
  return (await store.balance((await store.accountForKey(key))!.accountId)).total;
}

it('a request waiting behind a stuck image gets 504 within its own limit, never reaches the engine, and is refunded', async () => {
  const image = await testImage(64, 48);
  const stuck = post(image);
  await engine.started(1);
  const waiting = await post(image);
  expect(waiting.status).toBe(504);
  expect(waiting.error.code).toBe('processing_timeout');
  expect(waiting.error.detail).toMatch(/waited 0\.4 s for the model/);
  // It timed out in line: the engine only ever saw the stuck image.
  expect(engine.calls).toBe(1);
  expect((await stuck).status).toBe(504);
  expect(await balance()).toBe(10);
});
