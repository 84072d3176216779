// A refund the store refuses (SQLite busy, disk full) on the real SQLite store: the client still gets the
// request's own error; the refund and the failed key go through together once the store accepts writes
// again (at once for a busy store, from the background for a full disk).

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_OPTIONS } from '../../../src/api/options.js';
import { createService, type Service } from '../../../src/service/index.js';
import type { RemoveRequest } from '../../../src/service/types.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { rejectionOf } from '../../helpers/rejection.js';
import { testEngine, testImage, TEST_SERVICE_LIMITS } from '../../helpers/sharp-test-engine.js';

let dir: string;
let store: Store;
let service: Service;
let key: string;
let accountId: string;
/** store.refund calls to refuse before the store is "healthy" again. */
let refusals: number;

function sqliteBusy(): Error {
  return Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
}

/** The real store, except that its refund transaction fails while `refusals` lasts. */
function faultyStore(real: Store): Store {
  return new Proxy(real, {
    get(target, name, receiver) {
      if (name === 'refund') {
        return (...args: Parameters<Store['refund']>) => {
          if (refusals > 0) {
            refusals -= 1;
            return Promise.reject(sqliteBusy());
          }
          return target.refund(...args);
        };
      }
      const value = Reflect.get(target, name, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function request(idempotencyKey: string): Promise<RemoveRequest> {
  return {
    apiKey: key,
    idempotencyKey,
    source: { kind: 'file', data: await testImage(64, 48) },
    options: DEFAULT_OPTIONS,
    requestId: randomUUID(),
  };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-refund-'));
  store = await openStore(dir);
  ({ key, accountId } = await store.createAccountWithKey({ plan: 'pro', credits: 5 }));
  refusals = 0;
  const engine = testEngine({
    kind: 'fail',
    error: new Error('onnxruntime: Non-zero status code returned while running Conv node'),
  });
  service = await createService({ store: faultyStore(store), engine, ...TEST_SERVICE_LIMITS });
});

afterEach(async () => {
  await service.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a refund the store refuses', () => {
  it('is retried at once: the client gets 502 processing_failed, the credit back and a failed key', async () => {
    refusals = 2;
    const error = await rejectionOf(service.handleRemoveRequest(await request('busy-1')));
    expect([error.status, error.code]).toEqual([502, 'processing_failed']);
    expect((await store.balance(accountId)).total).toBe(5);
    const again = await rejectionOf(service.handleRemoveRequest(await request('busy-1')));
    expect(again.code).toBe('idempotency_key_failed');
  });

  it('still failing (disk full): the original error, the key in progress until the store recovers, then the credit back and the key failed', async () => {
    refusals = Number.POSITIVE_INFINITY;
    const error = await rejectionOf(service.handleRemoveRequest(await request('full-1')));
    expect([error.status, error.code]).toEqual([502, 'processing_failed']);
    expect((await store.balance(accountId)).total).toBe(4);
    // Refund and failed key are one transaction: until it goes through, a repeat is told to wait, not to pay again.
    const waiting = await rejectionOf(service.handleRemoveRequest(await request('full-1')));
    expect([waiting.status, waiting.code]).toEqual([409, 'idempotency_in_progress']);
    refusals = 0;
    await expect.poll(async () => (await store.balance(accountId)).total, { timeout: 15_000, interval: 200 }).toBe(5);
    expect((await rejectionOf(service.handleRemoveRequest(await request('full-1')))).code).toBe(
      'idempotency_key_failed',
    );
  });
});
