// A database host gone silent, for old connections and new ones alike: a TCP proxy of the test's own between
// `rmbg serve` and the run's real PostgreSQL freezes the connections open at one moment AND from then on accepts
// new ones without ever relaying them, while two requests a second come for 20 s. Every request is still answered
// within the answer bound (src/service/answer-bound.ts): 503 service_unavailable with Retry-After, or 200. Once the
// proxy lets new connections through again, requests get their images, and the ledger holds one charge per image.

import { afterAll, beforeAll, expect, it } from 'vitest';
import { ANSWER_BOUND_MS } from '../../src/service/answer-bound.js';
import { type Answered, type ProxiedStoreServe, startProxiedStoreServe } from '../helpers/proxied-store-serve.js';

const REQUESTS = 40;
const EVERY_MS = 500;
/** The client's own patience: far past the bound, so a stall shows as a slow answer, not as a lost one. */
const CLIENT_GIVES_UP_MS = 60_000;

let serve: ProxiedStoreServe;

// Requests stay in flight for up to the bound: the key's cap of requests at once (4) is not the point.
beforeAll(async () => {
  serve = await startProxiedStoreServe(1000);
});

afterAll(async () => {
  await serve?.close();
});

it('old connections frozen and new ones hanging: every request answered 503 with Retry-After or 200 within the bound', async () => {
  const { key, account } = await serve.newKey(1000);

  const warm = await Promise.all([0, 1, 2, 3].map(() => serve.removeOnce(key, performance.now(), CLIENT_GIVES_UP_MS)));
  expect(warm.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);

  const silentAt = performance.now();
  const frozen = serve.proxy.freeze();
  serve.proxy.hang();
  const answered = await serve.load(key, silentAt, REQUESTS, EVERY_MS, CLIENT_GIVES_UP_MS);
  const slowest = Math.max(...answered.map((answer) => answer.ms));
  const byStatus = new Map<string, number>();
  for (const answer of answered) {
    const what = `${answer.status} ${answer.code ?? ''}`.trim();
    byStatus.set(what, (byStatus.get(what) ?? 0) + 1);
  }
  console.log(
    `${frozen} connections frozen, new ones hanging; ${answered.length} requests: ${[...byStatus].map(([what, n]) => `${n} × ${what}`).join(', ')}; ` +
      `slowest answer ${(slowest / 1000).toFixed(1)} s`,
  );
  expect(frozen).toBeGreaterThan(0);
  for (const answer of answered) {
    expect(answer.ms, `request sent at +${answer.sentAt.toFixed(1)} s`).toBeLessThan(ANSWER_BOUND_MS);
    expect([200, 503], `request sent at +${answer.sentAt.toFixed(1)} s`).toContain(answer.status);
    if (answer.status === 503) {
      expect(answer.code).toBe('service_unavailable');
      expect(Number(answer.retryAfter)).toBeGreaterThan(0);
    }
  }

  // New connections pass again: images come back.
  serve.proxy.resume();
  const after: Answered[] = [];
  await expect
    .poll(
      async () => {
        const answer = await serve.removeOnce(key, silentAt, CLIENT_GIVES_UP_MS);
        after.push(answer);
        return answer.status;
      },
      { timeout: 60_000, interval: 500 },
    )
    .toBe(200);
  for (const answer of after) expect(answer.ms).toBeLessThan(ANSWER_BOUND_MS);

  // The ledger: once every request is settled, one charge per image delivered, the balance its ledger's sum.
  const delivered = [...warm, ...answered, ...after].filter((answer) => answer.status === 200).length;
  await serve.expectLedger(account, 1000, delivered, 90_000);
});
