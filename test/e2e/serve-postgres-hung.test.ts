// A database host gone silent, for old connections and new ones alike: a TCP proxy of the test's own between
// `rmbg serve` and the run's real PostgreSQL freezes the connections open at one moment AND from then on accepts
// new ones without ever relaying them, while two requests a second come for 20 s. Every request is still answered
// within the answer bound (src/service/answer-bound.ts): 503 service_unavailable with Retry-After, or 200. Once the
// proxy lets new connections through again, requests get their images, and the ledger holds one charge per image.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ANSWER_BOUND_MS } from '../../src/service/answer-bound.js';
import { warmKeyModel } from '../helpers/fast-models.js';
import { freshDatabase, pgRows } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { call, errorCode, rmbg, startServe, type ServeProcess } from '../helpers/serve-harness.js';

const REQUESTS = 40;
const EVERY_MS = 500;
/** The client's own patience: far past the bound, so a stall shows as a slow answer, not as a lost one. */
const CLIENT_GIVES_UP_MS = 60_000;

let url: string;
let work: string;
let proxy: TcpProxy;
let server: ServeProcess;
let photo: Buffer;

interface Answered {
  sentAt: number;
  status: number;
  code: string | undefined;
  retryAfter: string | null;
  ms: number;
}

async function removeOnce(key: string, since: number): Promise<Answered> {
  const form = new FormData();
  form.append('image_file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'photo.jpg');
  const started = performance.now();
  const sentAt = (started - since) / 1000;
  try {
    const answer = await call(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: { 'X-API-Key': key },
      body: form,
      signal: AbortSignal.timeout(CLIENT_GIVES_UP_MS),
    });
    const code = answer.status === 200 ? undefined : errorCode(answer);
    return {
      sentAt,
      status: answer.status,
      code,
      retryAfter: answer.headers.get('retry-after'),
      ms: performance.now() - started,
    };
  } catch {
    return { sentAt, status: 0, code: 'no answer', retryAfter: null, ms: performance.now() - started };
  }
}

const count = async (sql: string, params: unknown[] = []) =>
  Number((await pgRows<{ n: string }>(url, sql, params))[0]?.n);

beforeAll(async () => {
  url = await freshDatabase();
  work = mkdtempSync(join(tmpdir(), 'rmbg-pg-hung-'));
  const target = new URL(url);
  proxy = await startTcpProxy(target.hostname, Number(target.port));
  const proxied = new URL(url);
  proxied.port = String(proxy.port);
  photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
    .jpeg()
    .toBuffer();
  server = await startServe(join(work, 'unused-data-dir'), [
    '--store',
    proxied.toString(),
    '--model',
    warmKeyModel(),
    '--rate-limit',
    '100000',
    // Requests stay in flight for up to the bound: the key's cap of requests at once (4) is not the point.
    '--max-in-flight-per-key',
    '1000',
  ]);
});

afterAll(async () => {
  await server?.stop('SIGKILL');
  await proxy?.close();
  rmSync(work, { recursive: true, force: true });
});

it('old connections frozen and new ones hanging: every request answered 503 with Retry-After or 200 within the bound', async () => {
  const created = await rmbg(['keys', 'create', '--json', '--credits', '1000', '--store', url]);
  expect(created.exitCode, created.stderr).toBe(0);
  const { key, account } = JSON.parse(created.stdout) as { key: string; account: string };

  const warm = await Promise.all([0, 1, 2, 3].map(() => removeOnce(key, performance.now())));
  expect(warm.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);

  const silentAt = performance.now();
  const frozen = proxy.freeze();
  proxy.hang();
  const answers: Promise<Answered>[] = [];
  // The load's schedule (not a synchronisation: the answers are awaited below).
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      answers.push(removeOnce(key, silentAt));
      if (answers.length === REQUESTS) {
        clearInterval(timer);
        resolve();
      }
    }, EVERY_MS);
  });
  const answered = await Promise.all(answers);
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
  proxy.resume();
  const after: Answered[] = [];
  await expect
    .poll(
      async () => {
        const answer = await removeOnce(key, silentAt);
        after.push(answer);
        return answer.status;
      },
      { timeout: 60_000, interval: 500 },
    )
    .toBe(200);
  for (const answer of after) expect(answer.ms).toBeLessThan(ANSWER_BOUND_MS);

  // The ledger: once every request is settled, one charge per image delivered, the balance its ledger's sum.
  await expect
    .poll(() => count('SELECT COUNT(*) AS n FROM leases WHERE account_id = $1', [account]), { timeout: 90_000 })
    .toBe(0);
  const delivered = [...warm, ...answered, ...after].filter((answer) => answer.status === 200).length;
  expect(await count('SELECT payg_credits AS n FROM accounts WHERE id = $1', [account])).toBe(1000 - delivered);
  expect(
    await count(
      `SELECT COUNT(*) AS n FROM accounts a WHERE a.payg_credits + a.subscription_credits <> (SELECT COALESCE(SUM(amount), 0) FROM credit_ledger l WHERE l.account_id = a.id)`,
    ),
  ).toBe(0);
});
