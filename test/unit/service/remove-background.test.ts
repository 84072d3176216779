// The service's handleRemoveRequest and getAccount on a real SQLite store, with a sharp-backed stand-in
// engine: authentication, rate limits, charges and refunds, idempotent replays, queue and timeouts.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RmbgError } from '../../../src/api/errors.js';
import { LIMITS } from '../../../src/api/limits.js';
import { DEFAULT_OPTIONS, type RemoveOptions } from '../../../src/api/options.js';
import { createService, type Service, type ServiceDeps } from '../../../src/service/index.js';
import type { ImageSource } from '../../../src/api/request-parsing.js';
import type { RemoveRequest } from '../../../src/service/types.js';
import { openStore, STORE_FILE, type Store } from '../../../src/store/index.js';
import {
  testEngine,
  testImage,
  type Behaviour,
  type TestEngine,
  TEST_SERVICE_LIMITS,
} from '../../helpers/sharp-test-engine.js';
import { rejectionOf } from '../../helpers/rejection.js';
import { sqliteRows, withSqliteFile } from '../../helpers/sqlite-file.js';

const T0 = 1_700_000_000_000;

let dir: string;
let store: Store;
let engine: TestEngine;
let service: Service;
let clock: number;
let key: string;
let accountId: string;
let image: Buffer;

async function start(options: Partial<ServiceDeps> & { behaviour?: Behaviour } = {}): Promise<Service> {
  engine = testEngine(options.behaviour);
  service = await createService({
    store,
    engine,
    ...TEST_SERVICE_LIMITS,
    now: () => clock,
    ...options,
  });
  return service;
}

function request(overrides: Partial<RemoveRequest> = {}, options: Partial<RemoveOptions> = {}): RemoveRequest {
  return {
    apiKey: key,
    idempotencyKey: undefined,
    source: { kind: 'file', data: image },
    options: { ...DEFAULT_OPTIONS, ...options },
    requestId: randomUUID(),
    ...overrides,
  };
}

function ledgerRows(requestId: string): Promise<unknown[]> {
  return sqliteRows(
    store.path,
    'SELECT kind, pool, amount FROM credit_ledger WHERE request_id = ? ORDER BY id',
    requestId,
  );
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-service-'));
  store = await openStore(dir);
  clock = T0;
  const created = await store.createAccountWithKey({ plan: 'pro', credits: 5, now: T0 });
  key = created.key;
  accountId = created.accountId;
  image ??= await testImage(64, 48);
});

afterEach(async () => {
  engine?.release();
  await service?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a processed image', () => {
  it('returns the engine result, charges once, and reports request id and rate limit', async () => {
    await start();
    const req = request();
    const outcome = await service.handleRemoveRequest(req);
    expect(outcome.replayed).toBe(false);
    expect(outcome.requestId).toBe(req.requestId);
    expect(outcome.creditsCharged).toBe(1);
    expect(outcome.rateLimit).toEqual({ limit: 60, remaining: 59, resetSeconds: 60 });
    expect(outcome.image).toMatchObject({
      format: 'png',
      mimeType: 'image/png',
      width: 64,
      height: 48,
      foreground: { top: 1, left: 2, width: 62, height: 47 },
    });
    const meta = await sharp(outcome.image.data).metadata();
    expect([meta.format, meta.width, meta.height, meta.hasAlpha]).toEqual(['png', 64, 48, true]);
    expect(await store.balance(accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });
    expect(await ledgerRows(req.requestId)).toEqual([{ kind: 'charge', pool: 'payg', amount: -1 }]);
    expect(await store.usage({ requestId: req.requestId })).toEqual([
      expect.objectContaining({
        accountId,
        endpoint: 'removebg',
        status: 200,
        code: null,
        credits: 1,
        replayed: false,
        inputBytes: image.length,
        size: 'preview',
        format: 'png',
        width: 64,
        height: 48,
      }),
    ]);
  });

  it('charges the configured price, subscription credits first', async () => {
    await store.addCredits({ accountId }, 2, 'subscription');
    await start({ creditsPerImage: 3 });
    const outcome = await service.handleRemoveRequest(request());
    expect(outcome.creditsCharged).toBe(3);
    expect(await store.balance(accountId)).toEqual({ subscription: 0, payg: 4, total: 4 });
  });

  it('refuses with 402 insufficient_credits, saying balance and price, and processes nothing', async () => {
    await start({ creditsPerImage: 6 });
    const error = await rejectionOf(service.handleRemoveRequest(request()));
    expect([error.status, error.code]).toEqual([402, 'insufficient_credits']);
    expect(error.message).toContain('costs 6 credits');
    expect(error.message).toContain('balance is 5');
    // The API's words only: the CLI adds its own command (src/cli/report-error.ts).
    expect(error.message).not.toContain('rmbg ');
    expect(error.rateLimit).toEqual({ limit: 60, remaining: 59, resetSeconds: 60 });
    expect(engine.calls).toBe(0);
    expect((await store.balance(accountId)).total).toBe(5);
  });
});

describe('authentication', () => {
  it('answers 403 with the catalogue codes and never reaches the engine', async () => {
    await start();
    const free = await store.createAccountWithKey({ plan: 'free', credits: 50 });
    const revoked = await store.createKey(accountId);
    await store.revokeKey(revoked.id);
    const cases: Array<[string | undefined, string]> = [
      [undefined, 'missing_api_key'],
      ['', 'missing_api_key'],
      ['rmbg_not-a-real-key', 'invalid_api_key'],
      [revoked.key, 'invalid_api_key'],
      [free.key, 'plan_without_api_access'],
    ];
    for (const [apiKey, code] of cases) {
      const error = await rejectionOf(service.handleRemoveRequest(request({ apiKey })));
      expect([error.status, error.code]).toEqual([403, code]);
      const account = await rejectionOf(service.getAccount(apiKey));
      expect([account.status, account.code]).toEqual([403, code]);
    }
    expect(engine.calls).toBe(0);
    expect((await store.balance(free.accountId)).total).toBe(50);
    // Only the valid key of a plan without API access leaves usage rows; a missing or unknown key is counted.
    expect((await store.usage()).filter((u) => u.status === 403).map((u) => u.code)).toEqual([
      'plan_without_api_access',
      'plan_without_api_access',
    ]);
  });

  it('counts failed authentications instead of storing them, and refuses an address that keeps failing (429) unless its key was valid lately', async () => {
    await start({ maxAuthFailures: 3 });
    // The customer behind the address used its key before (a key unknown to the server is not looked up for it).
    await service.getAccount(key, 'acct-before', '203.0.113.9');
    const rowsBefore = (await store.usage()).length;
    for (let i = 0; i < 3; i += 1) {
      const error = await rejectionOf(
        service.handleRemoveRequest({ ...request({ apiKey: `rmbg_guess-${i}` }), clientAddress: '203.0.113.9' }),
      );
      expect(error.code).toBe('invalid_api_key');
    }
    // The address is over its limit: a bad or missing key from it waits for the minute to end.
    const refused = await rejectionOf(
      service.handleRemoveRequest({ ...request({ apiKey: 'rmbg_guess-y' }), clientAddress: '203.0.113.9' }),
    );
    expect([refused.status, refused.code]).toEqual([429, 'rate_limited']);
    expect(refused.retryAfterSeconds).toBeGreaterThan(0);
    const refusedAccount = await rejectionOf(service.getAccount('rmbg_guess-x', 'acct-x', '203.0.113.9'));
    expect(refusedAccount.code).toBe('rate_limited');
    expect((await rejectionOf(service.getAccount(undefined, 'acct-y', '203.0.113.9'))).code).toBe('rate_limited');
    expect(await store.usage()).toHaveLength(rowsBefore);
    // A valid key from the same address (a customer behind the same proxy or NAT) is served.
    expect((await service.handleRemoveRequest({ ...request(), clientAddress: '203.0.113.9' })).creditsCharged).toBe(1);
    // Another address is not affected.
    expect((await service.handleRemoveRequest({ ...request(), clientAddress: '198.51.100.7' })).creditsCharged).toBe(1);
  });
});

describe('rate limit', () => {
  it('allows rateLimit requests per key and minute, then 429 with Retry-After, across both endpoints', async () => {
    await start({ rateLimit: 2 });
    expect((await service.getAccount(key)).rateLimit).toEqual({ limit: 2, remaining: 1, resetSeconds: 60 });
    clock += 15_000;
    expect((await service.handleRemoveRequest(request())).rateLimit).toEqual({
      limit: 2,
      remaining: 0,
      resetSeconds: 45,
    });
    const error = await rejectionOf(service.handleRemoveRequest(request()));
    expect([error.status, error.code, error.retryAfterSeconds]).toEqual([429, 'rate_limited', 45]);
    expect(error.rateLimit).toEqual({ limit: 2, remaining: 0, resetSeconds: 45 });
    // Another key has its own budget.
    const other = await store.createKey(accountId);
    expect((await service.getAccount(other.key)).rateLimit.remaining).toBe(1);
    // A new window opens a minute after the first request.
    clock = T0 + 60_000;
    expect((await service.handleRemoveRequest(request())).rateLimit).toEqual({
      limit: 2,
      remaining: 1,
      resetSeconds: 60,
    });
    expect((await store.balance(accountId)).total).toBe(3);
  });
});

describe('failures after the charge are refunded', () => {
  it('502 from the engine: refunded exactly, key failed, reuse of the key is 409 idempotency_key_failed', async () => {
    await start({ behaviour: { kind: 'fail', error: new Error('onnx exploded') } });
    const req = request({ idempotencyKey: 'order-1' });
    const error = await rejectionOf(service.handleRemoveRequest(req));
    expect([error.status, error.code, error.message]).toEqual([502, 'processing_failed', 'onnx exploded']);
    expect(error.rateLimit?.remaining).toBe(59);
    expect((await store.balance(accountId)).total).toBe(5);
    expect(await ledgerRows(req.requestId)).toEqual([
      { kind: 'charge', pool: 'payg', amount: -1 },
      { kind: 'refund', pool: 'payg', amount: 1 },
    ]);
    expect((await store.usage({ requestId: req.requestId }))[0]).toMatchObject({
      status: 502,
      code: 'processing_failed',
      credits: 0,
    });

    engine.behaviour = { kind: 'work' };
    const reuse = await rejectionOf(service.handleRemoveRequest(request({ idempotencyKey: 'order-1' })));
    expect([reuse.status, reuse.code]).toEqual([409, 'idempotency_key_failed']);
    expect(reuse.message).toContain(req.requestId);
    expect(engine.calls).toBe(1);
    expect((await store.balance(accountId)).total).toBe(5);
  });

  it('400 image errors found by the engine are refunded too', async () => {
    await start();
    const error = await rejectionOf(
      service.handleRemoveRequest(request({ source: { kind: 'base64', data: Buffer.from('not an image at all') } })),
    );
    expect([error.status, error.code]).toEqual([400, 'corrupt_image']);
    expect((await store.balance(accountId)).total).toBe(5);
  });

  it('a refused image_url charges nothing (it is fetched before the charge) and frees its key', async () => {
    await start();
    const source: ImageSource = { kind: 'url', url: 'http://127.0.0.1/photo.jpg' };
    const req = request({ source, idempotencyKey: 'url-1' });
    const error = await rejectionOf(service.handleRemoveRequest(req));
    expect([error.status, error.code]).toEqual([400, 'invalid_image_url']);
    expect(engine.calls).toBe(0);
    expect((await store.balance(accountId)).total).toBe(5);
    expect(await ledgerRows(req.requestId)).toHaveLength(0);
    // Nothing was charged: the same key may be used again.
    expect((await rejectionOf(service.handleRemoveRequest(req))).code).toBe('invalid_image_url');
  });

  it('504 processing_timeout when the engine takes too long; refunded, key failed', async () => {
    await start({ behaviour: { kind: 'hang' }, processingTimeoutMs: 150 });
    const error = await rejectionOf(service.handleRemoveRequest(request({ idempotencyKey: 'slow' })));
    expect([error.status, error.code]).toEqual([504, 'processing_timeout']);
    expect(error.rateLimit?.limit).toBe(60);
    expect((await store.balance(accountId)).total).toBe(5);
    expect((await rejectionOf(service.handleRemoveRequest(request({ idempotencyKey: 'slow' })))).code).toBe(
      'idempotency_key_failed',
    );
  });

  it('a client that goes away without an Idempotency-Key stops its request, which is refunded', async () => {
    await start({ behaviour: { kind: 'hang' } });
    const controller = new AbortController();
    const pending = service.handleRemoveRequest(request({ signal: controller.signal }));
    await engine.started(1);
    controller.abort();
    const error = await rejectionOf(pending);
    expect(error.code).toBe('interrupted');
    expect((await store.balance(accountId)).total).toBe(5);
  });

  it('without an Idempotency-Key the charge stands once the answer was sent, and is refunded if the client left first', async () => {
    await start();
    const leases = async () => (await sqliteRows<{ n: number }>(store.path, 'SELECT count(*) AS n FROM leases'))[0]?.n;
    let sent: () => void = () => undefined;
    const delivered = await service.handleRemoveRequest(
      request({ answered: new Promise<void>((resolve) => (sent = resolve)) }),
    );
    // Until the answer was sent, the result's lease is held: a server killed now leaves it to the sweep.
    expect([await store.settlementOf(delivered.requestId), await leases()]).toEqual(['delivered', 1]);
    sent();
    await expect.poll(leases).toBe(0);
    expect((await store.balance(accountId)).total).toBe(4);

    const client = new AbortController();
    let left: () => void = () => undefined;
    await service.handleRemoveRequest(
      request({ signal: client.signal, answered: new Promise<void>((resolve) => (left = resolve)) }),
    );
    client.abort();
    left();
    await expect.poll(leases).toBe(0);
    expect((await store.balance(accountId)).total).toBe(4);
  });

  it('with an Idempotency-Key the request runs to the end after the client went away, and the retry replays it', async () => {
    await start({ behaviour: { kind: 'gated' } });
    const controller = new AbortController();
    const first = request({ idempotencyKey: 'keep-going', signal: controller.signal });
    const pending = service.handleRemoveRequest(first);
    await engine.started(1);
    controller.abort();
    engine.release();
    expect((await pending).replayed).toBe(false);
    const retry = await service.handleRemoveRequest(request({ idempotencyKey: 'keep-going' }));
    expect([retry.replayed, retry.requestId]).toEqual([true, first.requestId]);
    expect((await store.balance(accountId)).total).toBe(4);
  });
});

describe('idempotent replay', () => {
  it('repeats the original result, request id and credits, with no new charge and no engine call', async () => {
    await start({ creditsPerImage: 2 });
    const first = request({ idempotencyKey: 'photo-42' }, { size: 'small' });
    const original = await service.handleRemoveRequest(first);
    const second = request(
      { idempotencyKey: 'photo-42', source: { kind: 'base64', data: Buffer.from(image) } },
      { size: 'small' },
    );
    const replay = await service.handleRemoveRequest(second);
    expect(replay.replayed).toBe(true);
    expect(replay.requestId).toBe(first.requestId);
    expect(replay.creditsCharged).toBe(2);
    expect(replay.image.data.equals(original.image.data)).toBe(true);
    expect({ ...replay.image, data: null }).toEqual({ ...original.image, data: null });
    expect(replay.rateLimit.remaining).toBe(58);
    expect(engine.calls).toBe(1);
    expect((await store.balance(accountId)).total).toBe(3);
    expect((await store.usage({ requestId: second.requestId }))[0]).toMatchObject({
      status: 200,
      credits: 0,
      replayed: true,
      width: 64,
    });
  });

  it('409 idempotency_key_mismatch for another image or other options under the same key', async () => {
    await start();
    await service.handleRemoveRequest(request({ idempotencyKey: 'k' }));
    const otherOptions = await rejectionOf(
      service.handleRemoveRequest(request({ idempotencyKey: 'k' }, { crop: true })),
    );
    const otherImage = await rejectionOf(
      service.handleRemoveRequest(
        request({ idempotencyKey: 'k', source: { kind: 'file', data: await testImage(40, 40) } }),
      ),
    );
    for (const error of [otherOptions, otherImage])
      expect([error.status, error.code]).toEqual([409, 'idempotency_key_mismatch']);
    expect(engine.calls).toBe(1);
    expect((await store.balance(accountId)).total).toBe(4);
  });

  it('400 invalid_idempotency_key for a key over 128 characters, before anything is charged', async () => {
    await start();
    const error = await rejectionOf(
      service.handleRemoveRequest(request({ idempotencyKey: 'x'.repeat(LIMITS.maxIdempotencyKeyLength + 1) })),
    );
    expect([error.status, error.code]).toEqual([400, 'invalid_idempotency_key']);
    expect(error.rateLimit?.remaining).toBe(59);
    expect((await store.balance(accountId)).total).toBe(5);
  });

  it('of concurrent requests with one key exactly one is processed and charged; the others get 409 in progress', async () => {
    await start({ behaviour: { kind: 'gated' } });
    const requests = Array.from({ length: 5 }, () => request({ idempotencyKey: 'same' }));
    const settled = Promise.allSettled(requests.map((req) => service.handleRemoveRequest(req)));
    await engine.started(1);
    engine.release();
    const results = await settled;
    const succeeded = results.filter((r) => r.status === 'fulfilled');
    const rejected = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as RmbgError] : []));
    expect(succeeded).toHaveLength(1);
    expect(rejected.map((e) => [e.status, e.code])).toEqual(Array(4).fill([409, 'idempotency_in_progress']));
    expect(engine.calls).toBe(1);
    expect((await store.balance(accountId)).total).toBe(4);
    const replay = await service.handleRemoveRequest(request({ idempotencyKey: 'same' }));
    expect(replay.replayed).toBe(true);
  });

  it('409 idempotency_key_expired after 10 minutes; the purge deletes the payload and keeps the key reserved', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      await start();
      const first = request({ idempotencyKey: 'old' });
      await service.handleRemoveRequest(first);
      clock = T0 + LIMITS.replayWindowMs - 1;
      expect((await service.handleRemoveRequest(request({ idempotencyKey: 'old' }))).replayed).toBe(true);

      clock = T0 + LIMITS.replayWindowMs;
      await vi.advanceTimersByTimeAsync(60_000);
      await vi.waitFor(async () => {
        const rows = await sqliteRows(
          store.path,
          "SELECT state, payload IS NULL AS purged, request_id FROM idempotency_keys WHERE key = 'old'",
        );
        expect(rows).toEqual([{ state: 'succeeded', purged: 1, request_id: first.requestId }]);
      });

      const error = await rejectionOf(service.handleRemoveRequest(request({ idempotencyKey: 'old' })));
      expect([error.status, error.code]).toEqual([409, 'idempotency_key_expired']);
      expect(error.message).toContain('use a new key');
      expect((await store.balance(accountId)).total).toBe(4);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a 503 or 402 gives the key back: the same key works once the service can take the request', async () => {
    await start({ creditsPerImage: 6 });
    expect((await rejectionOf(service.handleRemoveRequest(request({ idempotencyKey: 'retry-me' })))).code).toBe(
      'insufficient_credits',
    );
    await store.addCredits({ accountId }, 1, 'payg');
    const outcome = await service.handleRemoveRequest(request({ idempotencyKey: 'retry-me' }));
    expect([outcome.replayed, outcome.creditsCharged]).toEqual([false, 6]);
    expect((await store.balance(accountId)).total).toBe(0);
  });
});

describe('queue', () => {
  it('runs one image at a time, lets maxQueue wait, and answers 503 service_busy beyond that (uncharged)', async () => {
    await start({ behaviour: { kind: 'gated' }, maxQueue: 1 });
    const running = service.handleRemoveRequest(request());
    const waiting = service.handleRemoveRequest(request({ idempotencyKey: 'queued' }));
    await engine.started(1);
    const busy = await rejectionOf(service.handleRemoveRequest(request({ idempotencyKey: 'too-many' })));
    expect([busy.status, busy.code]).toEqual([503, 'service_busy']);
    expect(busy.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(busy.rateLimit?.remaining).toBe(57);
    expect((await store.balance(accountId)).total).toBe(3);

    engine.release();
    await Promise.all([running, waiting]);
    expect(engine.maxRunning).toBe(1);
    const retried = await service.handleRemoveRequest(request({ idempotencyKey: 'too-many' }));
    expect(retried.replayed).toBe(false);
    expect((await store.balance(accountId)).total).toBe(2);
  });

  it('a full line of waiting requests raises no listener-leak warning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      await store.addCredits({ accountId }, 20, 'payg');
      await start({ behaviour: { kind: 'gated' }, maxQueue: 16 });
      const all = Promise.all(
        Array.from({ length: 17 }, (_, i) => service.handleRemoveRequest(request({ idempotencyKey: `k${i}` }))),
      );
      await engine.started(1);
      // All 17 charged: each is past its charge and in line for the engine, listening for shutdown.
      await vi.waitFor(async () => expect((await store.balance(accountId)).total).toBe(8));
      engine.release();
      await all;
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([]);
      expect((await store.balance(accountId)).total).toBe(8);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('close() cancels requests still waiting (refunded) and refuses new ones with 503', async () => {
    await start({ behaviour: { kind: 'hang' } });
    const first = service.handleRemoveRequest(request());
    const second = service.handleRemoveRequest(request());
    await engine.started(1);
    await service.close();
    expect((await rejectionOf(first)).code).toBe('interrupted');
    expect((await rejectionOf(second)).code).toBe('interrupted');
    expect((await store.balance(accountId)).total).toBe(5);
    const refused = await rejectionOf(service.handleRemoveRequest(request()));
    expect([refused.status, refused.code]).toEqual([503, 'service_unavailable']);
  });
});

describe('getAccount', () => {
  it('returns the spec account record with subscription, payg and their total', async () => {
    await store.addCredits({ accountId }, 3, 'subscription');
    await start();
    const outcome = await service.getAccount(key, 'acct-req-1');
    expect(outcome.account).toEqual({
      data: {
        attributes: {
          credits: { total: 8, subscription: 3, payg: 5, enterprise: 0 },
          api: { free_calls: 0, sizes: 'all' },
        },
      },
    });
    expect(outcome.rateLimit).toEqual({ limit: 60, remaining: 59, resetSeconds: 60 });
    expect((await store.usage({ requestId: 'acct-req-1' }))[0]).toMatchObject({
      endpoint: 'account',
      status: 200,
      credits: 0,
    });
  });
});

describe('start-up recovery', () => {
  const lease = (requestId: string, owner: string, expiresAt: number) => ({ requestId, owner, expiresAt });

  it('refunds a charge whose lease expired (its server died) and fails its in-progress key', async () => {
    await store.beginIdempotent(accountId, 'crashed', 'fp', lease('req-crashed', 'dead', T0 - 1), T0 - 10);
    await store.charge(accountId, 2, lease('req-crashed', 'dead', T0 - 1));
    expect((await store.balance(accountId)).total).toBe(3);
    await start();
    expect((await store.balance(accountId)).total).toBe(5);
    expect((await store.beginIdempotent(accountId, 'crashed', 'fp', lease('req-later', 'x', T0), T0)).state).toBe(
      'failed',
    );
  });

  it('a delivered request whose usage record was lost is not refunded by the next start (usage is reporting only)', async () => {
    await start();
    const req = request({ idempotencyKey: 'delivered' });
    await service.handleRemoveRequest(req);
    await service.close();
    expect(
      await withSqliteFile(store.path, (db) =>
        db.prepare('DELETE FROM usage_records WHERE request_id = ?').run(req.requestId),
      ),
    ).toBe(1);
    await start({ soleServer: true });
    expect((await store.balance(accountId)).total).toBe(4);
    expect((await service.handleRemoveRequest(request({ idempotencyKey: 'delivered' }))).replayed).toBe(true);
  });

  it("leaves another server's live lease alone, unless this is the store's only server", async () => {
    await store.charge(accountId, 2, lease('req-live', 'other', T0 + 30_000));
    await start();
    expect((await store.balance(accountId)).total).toBe(3);
    await service.close();
    await start({ soleServer: true });
    expect((await store.balance(accountId)).total).toBe(5);
  });
});

it('keeps the sqlite file free of API keys after serving requests', async () => {
  await start();
  await service.handleRemoveRequest(request({ idempotencyKey: 'k' }));
  await service.getAccount(key);
  const file = join(dir, STORE_FILE);
  const dump =
    JSON.stringify(await sqliteRows(file, 'SELECT * FROM api_keys')) +
    JSON.stringify(await sqliteRows(file, 'SELECT * FROM usage_records'));
  expect(dump).not.toContain(key);
  expect(dump).not.toContain(key.slice(11));
});
