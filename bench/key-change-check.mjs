#!/usr/bin/env node
// What the check of the valid keys costs at 1,000,000 keys on PostgreSQL (issue #46): the read a server makes when
// a throttled address sends a key its set does not hold (the one-row count of key changes), against a plain
// `SELECT 1` round trip on the same connection, interleaved; the same read through the store (its pool and
// driver) and through ValidKeys.current() (nothing changed); what follows when a key did change (the keys changed
// since); and, for comparison, what the set's poll read before (a count of the whole key table) and a full load.
// PostgreSQL: RMBG_BENCH_POSTGRES_URL (an admin URL; a scratch database is created), else an embedded one.
//
// Usage: node bench/key-change-check.mjs [reads=2000] [keys=1000000]   (after `npm run build`)
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { median, ROOT } from './lib/inputs.mjs';
import { ratio, table } from './lib/markdown.mjs';
import { postgresAdminUrl, scratchDatabase } from './lib/postgres.mjs';

const reads = Number(process.argv[2] ?? 2000);
const keys = Number(process.argv[3] ?? 1_000_000);
/** The slow reads (the old poll, the full load) are timed this many times. */
const SLOW_READS = 10;
const work = mkdtempSync(join(tmpdir(), 'rmbg-bench-key-change-'));
chmodSync(work, 0o755);
const cleanups = [() => rmSync(work, { recursive: true, force: true })];

const { openStore } = await import(pathToFileURL(join(ROOT, 'dist/store/index.js')).href);
const { ValidKeys } = await import(pathToFileURL(join(ROOT, 'dist/service/valid-keys.js')).href);

/** Milliseconds of each of `count` calls of `one()`. */
async function times(count, one) {
  const taken = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await one();
    taken.push(performance.now() - started);
  }
  return taken;
}

try {
  const url = await scratchDatabase(await postgresAdminUrl(work, cleanups));
  const store = await openStore({ engine: 'postgres', url });
  const client = new pg.Client(url);
  await client.connect();
  try {
    const { accountId } = await store.createAccountWithKey({ plan: 'pro' });
    const filling = performance.now();
    await client.query(
      `INSERT INTO api_keys (id, account_id, key_hash, key_prefix, created_at, key_change)
       SELECT 'key_bench_' || i, $1, md5(i::text) || md5((-i)::text), 'rmbg_bench', 0, 0 FROM generate_series(2, $2) AS i`,
      [accountId, keys],
    );
    await client.query('ANALYZE api_keys');
    const [{ count }] = (await client.query('SELECT count(*)::int AS count FROM api_keys')).rows;
    console.error(`${count} keys written in ${((performance.now() - filling) / 1000).toFixed(1)} s`);

    // Warm both statements, then interleave them so load on the machine falls on both alike.
    const selectOne = [];
    const check = [];
    for (let i = 0; i < 100; i++) {
      await client.query('SELECT 1');
      await client.query('SELECT latest FROM key_changes WHERE id = 1');
    }
    for (let i = 0; i < reads; i++) {
      selectOne.push(...(await times(1, () => client.query('SELECT 1'))));
      check.push(...(await times(1, () => client.query('SELECT latest FROM key_changes WHERE id = 1'))));
    }
    const storeCheck = await times(reads, () => store.keyChangeCount());
    const validKeys = new ValidKeys(store, (message) => console.error(message));
    const loading = await times(1, () => validKeys.current());
    const unchanged = await times(reads, () => validKeys.current());
    // A key created elsewhere: the next check reads the count and the one key changed since.
    const changed = [];
    for (let i = 0; i < 50; i++) {
      await store.createKey(accountId);
      changed.push(...(await times(1, () => validKeys.current())));
    }
    const oldPoll = await times(SLOW_READS, () =>
      client.query('SELECT count(*) AS created, count(revoked_at) AS revoked FROM api_keys'),
    );
    const fullLoad = await times(SLOW_READS, () => store.activeKeyHashes());

    const base = median(selectOne);
    const row = (what, taken) => [
      what,
      String(taken.length),
      `${median(taken).toFixed(3)} ms`,
      ratio(median(taken) / base),
    ];
    const [{ server_version: version }] = (await client.query('SHOW server_version')).rows;
    console.log(`\n${count.toLocaleString('en-US')} keys, PostgreSQL ${version}, medians:\n`);
    console.log(
      table(
        ['read', 'times', 'median', '÷ `SELECT 1`'],
        [
          row('`SELECT 1` (pg client, the same connection)', selectOne),
          row('the change check: `SELECT latest FROM key_changes` (same connection)', check),
          row('the change check through the store (`keyChangeCount()`: its pool and driver)', storeCheck),
          row('`ValidKeys.current()`, nothing changed (the miss of a throttled address)', unchanged),
          row('`ValidKeys.current()` after one key was created (count + keys changed since)', changed),
          row('before: the poll’s count of the key table', oldPoll),
          row('a full load of the valid keys (start only)', [...fullLoad, ...loading]),
        ],
      ),
    );
    validKeys.stop();
  } finally {
    await client.end();
    await store.close();
  }
} finally {
  for (const cleanup of cleanups) await cleanup();
}
