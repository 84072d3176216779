// A database that stops answering: a TCP proxy of the test's own between `rmbg serve` and the run's real
// PostgreSQL freezes the connections open at one moment (stops relaying, keeps them open: a failover that
// blackholes the old primary), while a request a second comes for 40 s. Every query on a frozen connection is
// given up at the driver's bound (statement_timeout + 1 s), the connection destroyed, and new ones pass: every
// request is answered within 20 s, 200s come back, and the ledger holds one charge per image delivered.

import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Answered, type ProxiedStoreServe, startProxiedStoreServe } from '../helpers/proxied-store-serve.js';

const WINDOW_S = 40;
/** The client's own patience: far past every bound the server should keep, so a stall shows as a failed request. */
const CLIENT_GIVES_UP_MS = 40_000;

let serve: ProxiedStoreServe;

// The frozen requests stay in flight for up to 16 s: the key's cap of requests at once (4) is not the point.
beforeAll(async () => {
  serve = await startProxiedStoreServe(100);
});

afterAll(async () => {
  await serve?.close();
});

it('connections frozen under load: every request answered within 20 s, 200 again within 30 s, one charge per 200', async () => {
  const { key, account } = await serve.newKey(1000);

  // Several pooled connections open and idle, as under load: four requests at once.
  const warm = await Promise.all([0, 1, 2, 3].map(() => serve.removeOnce(key, performance.now(), CLIENT_GIVES_UP_MS)));
  expect(warm.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);

  const frozenAt = performance.now();
  const frozen = serve.proxy.freeze();
  // A request a second for the window.
  const answered = await serve.load(key, frozenAt, WINDOW_S, 1000, CLIENT_GIVES_UP_MS);

  const slowest = Math.max(...answered.map((answer) => answer.ms));
  const firstOkAfter = answered.find((answer) => answer.status === 200);
  const failed = answered.filter((answer) => answer.status !== 200);
  console.log(
    `${frozen} connections frozen; ${answered.length} requests: ${answered.length - failed.length} × 200, ` +
      `${failed.map((answer) => `${answer.status} ${answer.code} after ${(answer.ms / 1000).toFixed(1)} s (sent at +${answer.sentAt.toFixed(0)} s)`).join(', ') || 'no failure'}; ` +
      `slowest answer ${(slowest / 1000).toFixed(1)} s; first 200 sent at +${firstOkAfter?.sentAt.toFixed(0)} s, ` +
      `answered at +${firstOkAfter ? (firstOkAfter.sentAt + firstOkAfter.ms / 1000).toFixed(1) : '-'} s`,
  );
  expect(frozen).toBeGreaterThan(0);
  for (const answer of answered) {
    expect(answer.ms, `request sent at +${answer.sentAt.toFixed(0)} s`).toBeLessThan(20_000);
    expect([200, 503]).toContain(answer.status);
    if (answer.status === 503) expect(answer.code).toBe('service_unavailable');
  }
  expect(firstOkAfter, 'a 200 after the freeze').toBeDefined();
  expect((firstOkAfter as Answered).sentAt + (firstOkAfter as Answered).ms / 1000).toBeLessThan(30);
  // The last requests, sent once every frozen connection was given up, are all served.
  expect(answered.filter((answer) => answer.sentAt >= 30).every((answer) => answer.status === 200)).toBe(true);

  // The ledger: once every request is settled, one charge per image delivered, and the kept balance its ledger's sum.
  await serve.expectLedger(account, 1000, warm.length + answered.length - failed.length, 60_000);
});
