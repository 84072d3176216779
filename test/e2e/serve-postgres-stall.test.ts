// One server stopped (SIGSTOP) inside a transaction, on one real PostgreSQL with two others, every setting
// at its default but the lease time: the stopped server holds the row lock of its request's lease (it is
// stopped inside the deliver that deletes it). The others keep serving other accounts, and the stopped
// server's own account, at their usual latency; once PostgreSQL ends the stopped session
// (idle_in_transaction_session_timeout) they settle its request (refund, failed key), and the ledger is exact.
// Woken, the stopped server reads back what happened and answers 503, not a result that was refunded.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import sharp from 'sharp';
import { noisyJpeg } from '../helpers/hostile-images.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabase, pgRows } from '../helpers/postgres.js';
import { writeIdentityModel } from '../helpers/onnx-writer.js';
import { call, errorCode, rmbg, startServe, type HttpAnswer, type ServeProcess } from '../helpers/serve-harness.js';

let url: string;
let work: string;
let servers: ServeProcess[] = [];
let bigPhoto: Buffer;
let smallPhoto: Buffer;

async function createKey(credits: number): Promise<{ key: string; account: string }> {
  const created = await rmbg(['keys', 'create', '--json', '--credits', String(credits), '--store', url]);
  if (created.exitCode !== 0) throw new Error(`keys create failed: ${created.stderr}`);
  return JSON.parse(created.stdout) as { key: string; account: string };
}

function remove(server: ServeProcess, key: string, photo: Buffer, idempotencyKey?: string): Promise<HttpAnswer> {
  const form = new FormData();
  form.append('image_file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'photo.jpg');
  form.append('size', 'full');
  const headers: Record<string, string> = { 'X-API-Key': key };
  if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
  return call(`${server.url}/v1.0/removebg`, { method: 'POST', headers, body: form });
}

async function timed(server: ServeProcess, key: string): Promise<number> {
  const started = performance.now();
  const answer = await remove(server, key, smallPhoto);
  expect(answer.status, answer.body.toString()).toBe(200);
  return performance.now() - started;
}

const count = async (sql: string, params: unknown[] = []) =>
  Number((await pgRows<{ n: string }>(url, sql, params))[0]?.n);
const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] as number;

beforeAll(async () => {
  url = await freshDatabase();
  work = mkdtempSync(join(tmpdir(), 'rmbg-pg-stall-'));
  const model = join(work, 'identity.onnx');
  writeIdentityModel(model, 'input', 'output');
  bigPhoto = await noisyJpeg(3000, 2500);
  smallPhoto = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
    .jpeg()
    .toBuffer();
  const flags = ['--store', url, '--model', model, '--lease-time', '2', '--rate-limit', '100000'];
  servers = await Promise.all([0, 1, 2].map(() => startServe(join(work, 'unused-data-dir'), flags)));
});

afterAll(async () => {
  for (const server of servers) process.kill(server.pid, 'SIGCONT');
  await Promise.all(servers.map((server) => server.stop('SIGKILL')));
  rmSync(work, { recursive: true, force: true });
});

it('a server stopped inside a transaction stalls nobody; its request is refunded once PostgreSQL ends its session', async () => {
  const [a, b, stopped] = servers as [ServeProcess, ServeProcess, ServeProcess];
  const victim = await createKey(10);
  const other = await createKey(1000);
  const usual: number[] = [];
  for (let i = 0; i < 10; i++) usual.push(await timed(i % 2 ? a : b, other.key));

  const inFlight = remove(stopped, victim.key, bigPhoto, 'stuck-1');
  inFlight.catch(() => {}); // awaited below; a failed test must not leave it unhandled
  await expect
    .poll(() => count('SELECT COUNT(*) AS n FROM leases WHERE account_id = $1 AND charged > 0', [victim.account]), {
      timeout: 30_000,
      interval: 20,
    })
    .toBe(1);
  // Hold the lease's row while the stopped server's deliver comes to delete it, so it is stopped right inside.
  const outsider = new pg.Client(url);
  await outsider.connect();
  try {
    await outsider.query('BEGIN');
    await outsider.query('SELECT * FROM leases WHERE account_id = $1 FOR UPDATE', [victim.account]);
    await expect
      .poll(
        () =>
          count(
            "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM leases%'",
          ),
        { timeout: 30_000, interval: 20 },
      )
      .toBe(1);
    process.kill(stopped.pid, 'SIGSTOP');
    await outsider.query('COMMIT');
  } finally {
    await outsider.end();
  }
  // The stopped server's session now holds the lease's lock, idle in its transaction.
  await expect
    .poll(
      () =>
        count(
          "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'",
        ),
      { interval: 20 },
    )
    .toBe(1);

  // Until its request is settled, the others serve the other account, and the stopped server's account too.
  const during: number[] = [await timed(a, victim.key)];
  const deadline = Date.now() + 30_000;
  while ((await count('SELECT COUNT(*) AS n FROM leases WHERE account_id = $1', [victim.account])) > 0) {
    expect(Date.now(), "the stopped server's request settled in time").toBeLessThan(deadline);
    during.push(await timed(during.length % 2 ? a : b, other.key));
  }
  console.log(
    `latency of another account's requests: usual median ${median(usual).toFixed(0)} ms (max ${Math.max(...usual).toFixed(0)}), during the stall median ${median(during).toFixed(0)} ms (max ${Math.max(...during).toFixed(0)}) over ${during.length} requests`,
  );
  // Usual latency: none waited on the stopped server's lock or for a pooled connection, which would have taken
  // lock_timeout or connect_timeout (5 s each). (The median is logged above, not judged: on a loaded machine
  // it varies with everything else that runs.)
  expect(Math.max(...during)).toBeLessThan(3000);

  // Woken, the stopped server finds its session ended and its request refunded: 503, and the key is failed.
  process.kill(stopped.pid, 'SIGCONT');
  const answer = await inFlight;
  expect([answer.status, errorCode(answer)]).toEqual([503, 'service_unavailable']);
  const retry = await remove(a, victim.key, bigPhoto, 'stuck-1');
  expect([retry.status, errorCode(retry)]).toEqual([409, 'idempotency_key_failed']);

  // The ledger is exact: the victim paid for the one request it got, and every kept balance is its ledger's sum.
  expect(await count("SELECT COUNT(*) AS n FROM credit_ledger WHERE kind = 'refund'")).toBe(1);
  expect(await count('SELECT payg_credits AS n FROM accounts WHERE id = $1', [victim.account])).toBe(9);
  expect(await count('SELECT payg_credits AS n FROM accounts WHERE id = $1', [other.account])).toBe(
    1000 - usual.length - during.length + 1,
  );
  expect(
    await count(
      `SELECT COUNT(*) AS n FROM accounts a WHERE a.payg_credits + a.subscription_credits <> (SELECT COALESCE(SUM(amount), 0) FROM credit_ledger l WHERE l.account_id = a.id)`,
    ),
  ).toBe(0);
});
