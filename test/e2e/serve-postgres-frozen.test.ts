// A database that stops answering: a TCP proxy of the test's own between `rmbg serve` and the run's real
// PostgreSQL freezes the connections open at one moment (stops relaying, keeps them open: a failover that
// blackholes the old primary), while a request a second comes for 40 s. Every query on a frozen connection is
// given up at the driver's bound (statement_timeout + 1 s), the connection destroyed, and new ones pass: every
// request is answered within 20 s, 200s come back, and the ledger holds one charge per image delivered.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { warmKeyModel } from '../helpers/fast-models.js';
import { freshDatabase, pgRows } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { call, errorCode, rmbg, startServe, type ServeProcess } from '../helpers/serve-harness.js';

const WINDOW_S = 40;
/** The client's own patience: far past every bound the server should keep, so a stall shows as a failed request. */
const CLIENT_GIVES_UP_MS = 40_000;

let url: string;
let work: string;
let proxy: TcpProxy;
let server: ServeProcess;
let photo: Buffer;

interface Answered {
  /** Seconds after the freeze the request was sent (negative: before it). */
  sentAt: number;
  status: number;
  code: string | undefined;
  ms: number;
}

async function removeOnce(key: string, frozenAt: number): Promise<Answered> {
  const form = new FormData();
  form.append('image_file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'photo.jpg');
  const started = performance.now();
  const sentAt = (started - frozenAt) / 1000;
  try {
    const answer = await call(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: { 'X-API-Key': key },
      body: form,
      signal: AbortSignal.timeout(CLIENT_GIVES_UP_MS),
    });
    const code = answer.status === 200 ? undefined : errorCode(answer);
    return { sentAt, status: answer.status, code, ms: performance.now() - started };
  } catch {
    return { sentAt, status: 0, code: 'no answer', ms: performance.now() - started };
  }
}

const count = async (sql: string, params: unknown[] = []) =>
  Number((await pgRows<{ n: string }>(url, sql, params))[0]?.n);

beforeAll(async () => {
  url = await freshDatabase();
  work = mkdtempSync(join(tmpdir(), 'rmbg-pg-frozen-'));
  const target = new URL(url);
  proxy = await startTcpProxy(target.hostname, Number(target.port));
  const proxied = new URL(url);
  proxied.port = String(proxy.port);
  photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#cc6633' } })
    .jpeg()
    .toBuffer();
  server = await startServe(join(work, 'unused-data-dir'), [
    '--store',
    proxied.toString(),
    '--model',
    warmKeyModel(),
    '--rate-limit',
    '100000',
    // The frozen requests stay in flight for up to 16 s: the key's cap of requests at once (4) is not the point.
    '--max-in-flight-per-key',
    '100',
  ]);
});

afterAll(async () => {
  await server?.stop('SIGKILL');
  await proxy?.close();
  rmSync(work, { recursive: true, force: true });
});

it('connections frozen under load: every request answered within 20 s, 200 again within 30 s, one charge per 200', async () => {
  const created = await rmbg(['keys', 'create', '--json', '--credits', '1000', '--store', url]);
  expect(created.exitCode, created.stderr).toBe(0);
  const { key, account } = JSON.parse(created.stdout) as { key: string; account: string };

  // Several pooled connections open and idle, as under load: four requests at once.
  const warm = await Promise.all([0, 1, 2, 3].map(() => removeOnce(key, performance.now())));
  expect(warm.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);

  const frozenAt = performance.now();
  const frozen = proxy.freeze();
  const answers: Promise<Answered>[] = [];
  // The load's schedule, a request a second (not a synchronisation: the answers are awaited below).
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      answers.push(removeOnce(key, frozenAt));
      if (answers.length === WINDOW_S) {
        clearInterval(timer);
        resolve();
      }
    }, 1000);
  });
  const answered = await Promise.all(answers);

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
  await expect
    .poll(() => count('SELECT COUNT(*) AS n FROM leases WHERE account_id = $1', [account]), { timeout: 60_000 })
    .toBe(0);
  const delivered = warm.length + answered.length - failed.length;
  expect(await count('SELECT payg_credits AS n FROM accounts WHERE id = $1', [account])).toBe(1000 - delivered);
  expect(
    await count(
      `SELECT COUNT(*) AS n FROM accounts a WHERE a.payg_credits + a.subscription_credits <> (SELECT COALESCE(SUM(amount), 0) FROM credit_ledger l WHERE l.account_id = a.id)`,
    ),
  ).toBe(0);
});
