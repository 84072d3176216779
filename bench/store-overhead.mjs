#!/usr/bin/env node
// What the store costs, SQLite vs PostgreSQL, in one run on the same machine:
//  1. store operations: one request's store work (authenticate, count the rate limit, charge, deliver, usage
//     record) as cycles per second, one at a time and 8 at once;
//  2. served requests: `rmbg serve` with the tiny identity model (inference ≈ 0), POST /v1.0/removebg of a
//     64×48 photo, requests per second one at a time and 8 at once; the per-request overhead of PostgreSQL is
//     the difference of the serial times.
// PostgreSQL: RMBG_BENCH_POSTGRES_URL (an admin URL; a scratch database is created), else an embedded one.
//
// Usage: node bench/store-overhead.mjs [cycles=400] [requests=200]   (after `npm run build`)
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import sharp from 'sharp';
import { writeIdentityModel } from './lib/identity-model.mjs';
import { ROOT } from './lib/inputs.mjs';
import { ms, ratio, table } from './lib/markdown.mjs';
import { postgresAdminUrl, scratchDatabase } from './lib/postgres.mjs';
import { listeningUrl } from './lib/serve-url.mjs';

const cycles = Number(process.argv[2] ?? 400);
const requests = Number(process.argv[3] ?? 200);
const CONCURRENT = 8;
const work = mkdtempSync(join(tmpdir(), 'rmbg-bench-store-'));
chmodSync(work, 0o755);
const cleanups = [() => rmSync(work, { recursive: true, force: true })];

/** Runs `count` calls of `one(i)`, `parallel` at a time; resolves with calls per second. */
async function rate(count, parallel, one) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) await one(next++);
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

const { openStore } = await import(pathToFileURL(join(ROOT, 'dist/store/index.js')).href);
const admin = await postgresAdminUrl(work, cleanups);
const targets = {
  SQLite: {
    store: { engine: 'sqlite', path: join(work, 'sqlite', 'rmbg.sqlite') },
    flag: join(work, 'serve-sqlite', 'rmbg.sqlite'),
  },
  PostgreSQL: { store: { engine: 'postgres', url: await scratchDatabase(admin) }, flag: await scratchDatabase(admin) },
};

// 1. Store operations.
const storeRates = {};
for (const [name, target] of Object.entries(targets)) {
  const store = await openStore(target.store);
  const created = await store.createAccountWithKey({ plan: 'pro', credits: cycles * 4 });
  let n = 0;
  const cycle = async () => {
    const requestId = `bench-${name}-${n++}`;
    const lease = { requestId, owner: 'bench', expiresAt: Date.now() + 30_000 };
    const owner = await store.accountForKey(created.key);
    await store.countRequest(owner.keyId, Date.now(), 60_000);
    await store.charge(owner.accountId, 1, lease);
    await store.deliver(requestId, undefined);
    await store.recordUsage({
      requestId,
      accountId: owner.accountId,
      keyId: owner.keyId,
      endpoint: 'removebg',
      status: 200,
      code: null,
      credits: 1,
      replayed: false,
      inputBytes: 1,
      size: 'preview',
      format: 'png',
      width: 1,
      height: 1,
      durationMs: 1,
      createdAt: Date.now(),
    });
  };
  await rate(20, 1, cycle); // warm-up
  storeRates[name] = { serial: await rate(cycles, 1, cycle), concurrent: await rate(cycles, CONCURRENT, cycle) };
  await store.close();
}

// 2. Served requests.
const model = join(work, 'identity.onnx');
writeIdentityModel(model, 'input', 'output');
const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
  .jpeg()
  .toBuffer();
const httpRates = {};
for (const [name, target] of Object.entries(targets)) {
  const child = execa(
    'node',
    [
      join(ROOT, 'bin/rmbg.js'),
      'serve',
      '--port',
      '0',
      '--store',
      target.flag,
      '--model',
      model,
      '--rate-limit',
      '1000000',
      '--max-queue',
      '64',
      '--max-in-flight-per-key',
      String(CONCURRENT),
    ],
    { cwd: ROOT, reject: false },
  );
  const url = await listeningUrl(child, () => child.stderr.read()?.toString() ?? '');
  const keys = await execa(
    'node',
    [join(ROOT, 'bin/rmbg.js'), 'keys', 'create', '--json', '--credits', String(requests * 4), '--store', target.flag],
    { cwd: ROOT },
  );
  const { key } = JSON.parse(keys.stdout);
  const send = async () => {
    const form = new FormData();
    form.append('image_file', new Blob([photo], { type: 'image/jpeg' }), 'p.jpg');
    const answer = await fetch(`${url}/v1.0/removebg`, { method: 'POST', headers: { 'X-API-Key': key }, body: form });
    await answer.arrayBuffer();
    if (answer.status !== 200) throw new Error(`${name}: HTTP ${answer.status}`);
  };
  await rate(10, 1, send); // warm-up
  httpRates[name] = { serial: await rate(requests, 1, send), concurrent: await rate(requests, CONCURRENT, send) };
  child.kill('SIGTERM');
  await child;
}
for (const cleanup of cleanups) await cleanup();

const perSecond = (value) => value.toFixed(0);
console.log(
  `\nStore operations (one request's store work: authenticate, rate-limit count, charge, deliver, usage record), ${cycles} cycles\n`,
);
console.log(
  table(
    ['engine', 'serial cycles/s', 'ms per cycle', `${CONCURRENT} at once cycles/s`],
    Object.entries(storeRates).map(([name, r]) => [
      name,
      perSecond(r.serial),
      (1000 / r.serial).toFixed(2),
      perSecond(r.concurrent),
    ]),
  ),
);
console.log(
  `PostgreSQL / SQLite: serial ${ratio(storeRates.PostgreSQL.serial / storeRates.SQLite.serial)}, ${CONCURRENT} at once ${ratio(storeRates.PostgreSQL.concurrent / storeRates.SQLite.concurrent)}`,
);
console.log(`\nServed requests (rmbg serve, identity model, 64×48 JPEG, size preview), ${requests} requests\n`);
console.log(
  table(
    ['engine', 'serial req/s', 'ms per request', `${CONCURRENT} at once req/s`],
    Object.entries(httpRates).map(([name, r]) => [
      name,
      perSecond(r.serial),
      (1000 / r.serial).toFixed(1),
      perSecond(r.concurrent),
    ]),
  ),
);
console.log(
  `PostgreSQL / SQLite: serial ${ratio(httpRates.PostgreSQL.serial / httpRates.SQLite.serial)}, ${CONCURRENT} at once ${ratio(httpRates.PostgreSQL.concurrent / httpRates.SQLite.concurrent)}; ` +
    `PostgreSQL adds ${ms(1000 / httpRates.PostgreSQL.serial - 1000 / httpRates.SQLite.serial)} ms per serial request`,
);
