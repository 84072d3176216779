// Several real `rmbg serve` processes on one real PostgreSQL (the run's embedded server, a database of this
// file's own), each with a tiny identity model: one charge for one Idempotency-Key sent to different
// servers, one rate limit across servers, a SIGKILLed server whose charges the survivors settle once its
// leases expire (without anyone restarting it), and a remote batch through a round-robin proxy that loses
// one of its two servers mid-batch.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { noisyJpeg } from '../helpers/hostile-images.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFaultServer, type FaultStep } from '../helpers/fault-server.js';
import { freshDatabase, pgRows } from '../helpers/postgres.js';
import {
  cutoutsIn,
  makeShoot,
  outputName,
  relayStep,
  removeRemote,
  waitFor,
  type Relayed,
} from '../helpers/remove-remote-harness.js';
import { call, rmbg, startServe, type HttpAnswer, type ServeProcess } from '../helpers/serve-harness.js';
import { writeIdentityModel } from '../helpers/onnx-writer.js';

const LEASE_SECONDS = 2;
const RATE_LIMIT = 30;
let url: string;
let work: string;
let model: string;
let servers: ServeProcess[] = [];
/** A photo big enough that one full-size cutout keeps a server busy for a while (PNG encoding of 4.8 MP). */
let bigPhoto: Buffer;
let smallPhoto: Buffer;
let flags: string[];

async function createKey(credits: number): Promise<string> {
  const created = await rmbg(['keys', 'create', '--json', '--credits', String(credits), '--store', url]);
  if (created.exitCode !== 0) throw new Error(`keys create failed: ${created.stderr}`);
  return (JSON.parse(created.stdout) as { key: string }).key;
}

function remove(server: ServeProcess, key: string, photo: Buffer, idempotencyKey?: string): Promise<HttpAnswer> {
  const form = new FormData();
  form.append('image_file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'photo.jpg');
  form.append('size', 'full');
  form.append('format', 'png');
  const headers: Record<string, string> = { 'X-API-Key': key };
  if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
  return call(`${server.url}/v1.0/removebg`, { method: 'POST', headers, body: form });
}

async function credits(server: ServeProcess, key: string): Promise<number> {
  const answer = await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
  expect(answer.status).toBe(200);
  return (JSON.parse(answer.body.toString()) as { data: { attributes: { credits: { total: number } } } }).data
    .attributes.credits.total;
}

const count = async (sql: string) => Number((await pgRows<{ n: string }>(url, sql))[0]?.n);

beforeAll(async () => {
  url = await freshDatabase();
  work = mkdtempSync(join(tmpdir(), 'rmbg-pg-e2e-'));
  model = join(work, 'identity.onnx');
  // Named like the manifest's output: every inference succeeds, with the input's first plane as the mask.
  writeIdentityModel(model, 'input', 'output');
  bigPhoto = await noisyJpeg(2400, 2000);
  smallPhoto = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
    .jpeg()
    .toBuffer();
  flags = ['--store', url, '--model', model, '--lease-time', String(LEASE_SECONDS), '--rate-limit', String(RATE_LIMIT)];
  // Started together: they race to migrate the empty database (the advisory lock lets one do it).
  servers = await Promise.all([0, 1, 2].map(() => startServe(join(work, 'unused-data-dir'), flags)));
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop('SIGKILL')));
  rmSync(work, { recursive: true, force: true });
});

describe('three rmbg serve processes on one PostgreSQL', () => {
  it('are ready (store migrated once, model loaded) and keep /metrics to this machine', async () => {
    for (const server of servers) {
      expect((await call(`${server.url}/healthz`)).status).toBe(200);
      expect((await call(`${server.url}/readyz`)).status).toBe(200);
      const metrics = await call(`${server.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.body.toString()).toContain('rmbg_credits_charged_total');
    }
    expect(await pgRows(url, 'SELECT version FROM rmbg_schema')).toHaveLength(1);
  });

  it('the admin commands work on the same database with --store: keys list, credits add, keys revoke', async () => {
    const key = await createKey(3);
    const listed = await rmbg(['keys', 'list', '--json', '--store', url]);
    const keys = JSON.parse(listed.stdout) as Array<{ id: string; prefix: string }>;
    const mine = keys.find((k) => key.startsWith(k.prefix));
    expect(mine).toBeDefined();
    const added = await rmbg(['credits', 'add', '4', '--key', key, '--store', url]);
    expect([added.exitCode, added.stdout.trim()]).toEqual([
      0,
      'added 4 payg credits; balance 7 (subscription 0, payg 7)',
    ]);
    expect(await credits(servers[1]!, key)).toBe(7);
    expect((await rmbg(['keys', 'revoke', mine!.id, '--store', url])).exitCode).toBe(0);
    // Revoked in the shared database: every server refuses the key at once.
    for (const server of servers)
      expect((await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } })).status).toBe(403);
  });

  it('the same Idempotency-Key sent to different servers is processed and charged once; every server replays it', async () => {
    const key = await createKey(10);
    const [a, b, c] = servers as [ServeProcess, ServeProcess, ServeProcess];
    const first = remove(a, key, bigPhoto, 'order-7');
    // Once the key is reserved (by a's request), the other servers see it in progress.
    await expect
      .poll(() => count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE key = 'order-7'"), { timeout: 30_000 })
      .toBe(1);
    const during = await Promise.all([remove(b, key, bigPhoto, 'order-7'), remove(c, key, bigPhoto, 'order-7')]);
    const original = await first;
    expect(original.status).toBe(200);
    // b and c raced a's request: each either saw it in progress (409) or, if a had already finished, replayed it.
    for (const answer of during) {
      if (answer.status === 409) expect(answer.headers.get('retry-after')).not.toBeNull();
      else expect([answer.status, answer.headers.get('x-idempotent-replayed')]).toEqual([200, 'true']);
    }
    for (const server of servers) {
      const replay = await remove(server, key, bigPhoto, 'order-7');
      expect([replay.status, replay.headers.get('x-request-id'), replay.headers.get('x-idempotent-replayed')]).toEqual([
        200,
        original.headers.get('x-request-id'),
        'true',
      ]);
      expect(replay.body.equals(original.body)).toBe(true);
    }
    expect(await credits(c, key)).toBe(9);
  });

  it(`a limit of ${RATE_LIMIT} requests per minute per key holds across the servers, with truthful X-RateLimit-Remaining`, async () => {
    const key = await createKey(0);
    const answers = await Promise.all(
      Array.from({ length: RATE_LIMIT + 9 }, (_, i) =>
        call(`${servers[i % 3]!.url}/v1.0/account`, { headers: { 'X-API-Key': key } }),
      ),
    );
    const ok = answers.filter((answer) => answer.status === 200);
    const limited = answers.filter((answer) => answer.status === 429);
    expect([ok.length, limited.length]).toEqual([RATE_LIMIT, 9]);
    expect(ok.map((answer) => Number(answer.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y)).toEqual(
      Array.from({ length: RATE_LIMIT }, (_, i) => i),
    );
    for (const answer of limited) {
      expect(answer.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });

  it('a SIGKILLed server with charged requests in flight: the survivors refund exactly what never got a 200 once its leases expire', async () => {
    const grants = 40;
    const key = await createKey(grants);
    const [a, b, victim] = servers as [ServeProcess, ServeProcess, ServeProcess];
    let delivered = 0;
    for (const server of [a, b]) {
      const answer = await remove(server, key, smallPhoto);
      expect(answer.status).toBe(200);
      delivered += 1;
    }
    // Eight requests line up in the victim's engine: each is charged when admitted, then waits its turn.
    const keys = Array.from({ length: 8 }, (_, i) => `victim-${i}`);
    const inFlight = keys.map((idem) => remove(victim, key, bigPhoto, idem).catch(() => undefined));
    await expect
      .poll(() => count('SELECT COUNT(*) AS n FROM leases WHERE charged > 0'), { timeout: 30_000 })
      .toBeGreaterThan(0);
    // Wait until one of the victim's leases was renewed past a whole lease time: without renewal the others
    // would have refunded it by now. They have not refunded anything.
    await expect
      .poll(
        () => count(`SELECT COUNT(*) AS n FROM leases WHERE expires_at > created_at + ${2 * LEASE_SECONDS * 1000}`),
        { timeout: 30_000 },
      )
      .toBeGreaterThan(0);
    expect(await count("SELECT COUNT(*) AS n FROM credit_ledger WHERE kind = 'refund'")).toBe(0);

    await victim.stop('SIGKILL');
    const answers = await Promise.all(inFlight);
    const answered = answers.filter((answer) => answer?.status === 200).length;
    expect(answered).toBeLessThan(keys.length);
    // No one restarts it: the survivors' sweeps settle every lease it held.
    await expect.poll(() => count('SELECT COUNT(*) AS n FROM leases'), { timeout: 30_000 }).toBe(0);

    // Each request the victim never answered is, from a survivor, either a replay (it was delivered just
    // before the kill) or a failed key (refunded): nothing in between, and nothing charged twice.
    let replayed = 0;
    let failed = 0;
    for (const [i, idem] of keys.entries()) {
      if (answers[i]?.status === 200) continue;
      const retry = await remove(a, key, bigPhoto, idem);
      if (retry.status === 200) replayed += 1;
      else {
        expect([retry.status, JSON.parse(retry.body.toString()).errors[0].code]).toEqual([
          409,
          'idempotency_key_failed',
        ]);
        failed += 1;
      }
    }
    expect(failed).toBeGreaterThan(0);
    expect(await credits(b, key)).toBe(grants - delivered - answered - replayed);
    expect(await count("SELECT COUNT(DISTINCT request_id) AS n FROM credit_ledger WHERE kind = 'refund'")).toBe(failed);
    // The survivors counted what they settled.
    const expired = await Promise.all(
      [a, b].map(
        async (server) =>
          /rmbg_leases_expired_total (\d+)/.exec((await call(`${server.url}/metrics`)).body.toString())?.[1],
      ),
    );
    expect(expired.reduce((sum, n) => sum + Number(n), 0)).toBe(failed);
  });

  it('a remote batch through a round-robin proxy over two servers, one SIGKILLed mid-batch, then re-run: every photo charged exactly once', async () => {
    const grants = 100;
    const key = await createKey(grants);
    // Fewer photos than the key's rate limit: the limit is shared by the servers, retries count too.
    const shoot = await makeShoot(20);
    const doomed = await startServe(join(work, 'unused-data-dir'), flags);
    servers.push(doomed);
    // The load balancer: alternates between its servers and drops the connection when one does not answer.
    const targets = [servers[0]!.url, doomed.url];
    const relayed: Relayed[] = [];
    let doomedAnswered = 0;
    let turn = 0;
    const roundRobin: FaultStep = async (request) => {
      const upstream = targets[turn++ % targets.length] as string;
      try {
        const step = await (relayStep(upstream, relayed) as (r: typeof request) => Promise<FaultStep>)(request);
        if (upstream === doomed.url && relayed.at(-1)?.status === 200) doomedAnswered += 1;
        return step;
      } catch {
        return { kind: 'drop' };
      }
    };
    const balancer = await createFaultServer({ fallback: roundRobin });
    try {
      const first = removeRemote(shoot, balancer.url, key, ['--concurrency', '4']);
      await waitFor(() => doomedAnswered > 0, 60_000, 'a cutout from the doomed server');
      await doomed.stop('SIGKILL');
      expect(cutoutsIn(shoot).length, 'cutouts written when the server was killed').toBeLessThan(shoot.names.length);
      // Its health check fails: the balancer sends everything to the other server from now on.
      targets.splice(1, 1);
      await first;
      const rerun = await removeRemote(shoot, balancer.url, key);
      expect(rerun.exitCode, rerun.stderr).toBe(0);
      expect(cutoutsIn(shoot)).toEqual(shoot.names.map(outputName).sort());
      await expect.poll(() => count('SELECT COUNT(*) AS n FROM leases'), { timeout: 30_000 }).toBe(0);
      expect(await credits(servers[0]!, key)).toBe(grants - shoot.names.length);
    } finally {
      await balancer.close();
      shoot.cleanup();
    }
  });
});
