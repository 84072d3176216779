// The background refund's rounds never pile up: while the store is slow to answer one (a database that stopped
// answering, bounded only by the driver's query bound), the timer's next ticks join it instead of sending more.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { Refunder } from '../../../src/service/refunder.js';
import { openStore, type Store } from '../../../src/store/index.js';

let dir: string;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-refunder-'));
  store = await openStore(dir);
});

afterEach(async () => {
  vi.useRealTimers();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

it('a background round still waiting for the store makes the next ticks wait for it, not send again', async () => {
  const { accountId } = await store.createAccountWithKey({ plan: 'pro', credits: 5 });
  const lease = { requestId: 'req-1', owner: 'test', expiresAt: Date.now() + 60_000 };
  expect((await store.charge(accountId, 1, lease, Date.now())).ok).toBe(true);

  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });
  let refusing = true;
  let answer: (() => void) | undefined;
  let sent = 0;
  const slowStore: Pick<Store, 'refund' | 'refundUnreceived'> = {
    refundUnreceived: store.refundUnreceived,
    refund: async (...args) => {
      sent += 1;
      if (refusing) throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
      // The store's answer comes only when the test says so (a connection that went silent).
      await new Promise<void>((resolve) => (answer = resolve));
      return store.refund(...args);
    },
  };
  const refunder = new Refunder(slowStore, Date.now, () => {});
  const first = refunder.refund('req-1', undefined);
  await vi.advanceTimersByTimeAsync(1000); // the immediate retries' waits (25 + 100 + 400 ms)
  expect(await first).toBeUndefined(); // handed to the background
  const immediate = sent;
  refusing = false;

  for (let tick = 0; tick < 4; tick++) await vi.advanceTimersByTimeAsync(5000);
  expect(sent - immediate).toBe(1); // one round in flight, whatever the number of ticks

  answer?.();
  await refunder.retryPending();
  expect((await store.balance(accountId)).total).toBe(5);
  refunder.stop();
});
