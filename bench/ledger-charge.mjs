#!/usr/bin/env node
// What a charge costs with a long ledger (issue #20): the store's charge (lock the account, read its kept
// balance, write the ledger row and the balance, open the lease) against an account with 10 ledger rows and
// against one with 1,000,000, on SQLite and on PostgreSQL, and the ratio (the short accounts take 10 timed charges
// each, so their ledgers hold 10 to 20 rows). For comparison, the query every
// charge, image_url pre-check and /account ran before balances were kept: the sum of the account's ledger.
// PostgreSQL: RMBG_BENCH_POSTGRES_URL (an admin URL; a scratch database is created), else an embedded one.
//
// Usage: node bench/ledger-charge.mjs [charges=300] [rows=1000000]   (after `npm run build`)
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { median, ROOT } from './lib/inputs.mjs';
import { ratio, table } from './lib/markdown.mjs';
import { postgresAdminUrl, scratchDatabase } from './lib/postgres.mjs';

const charges = Number(process.argv[2] ?? 300);
const rows = Number(process.argv[3] ?? 1_000_000);
const work = mkdtempSync(join(tmpdir(), 'rmbg-bench-ledger-'));
chmodSync(work, 0o755);
const cleanups = [() => rmSync(work, { recursive: true, force: true })];

// One grant, then `rows - 1` one-credit charges with their request ids (the ledger of a busy account).
const FILL = {
  sqlite: (n) => `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n - 1})
    INSERT INTO credit_ledger (account_id, kind, pool, amount, request_id, created_at) SELECT ?, 'charge', 'payg', -1, 'old-' || i, 0 FROM n`,
  postgres: (n) => `INSERT INTO credit_ledger (account_id, kind, pool, amount, request_id, created_at)
    SELECT $1, 'charge', 'payg', -1, 'old-' || i, 0 FROM generate_series(1, ${n - 1}) AS i`,
};
const OLD_BALANCE =
  'SELECT pool, CAST(SUM(amount) AS BIGINT) AS sum FROM credit_ledger WHERE account_id = ? GROUP BY pool';

const { openStore } = await import(pathToFileURL(join(ROOT, 'dist/store/index.js')).href);
// The store's own connection (node:sqlite or better-sqlite3, whichever this Node uses) for the file beside it.
const { openSqlite } = await import(pathToFileURL(join(ROOT, 'dist/store/sqlite-connection.js')).href);
const admin = await postgresAdminUrl(work, cleanups);
const results = [];
for (const engine of ['sqlite', 'postgres']) {
  const target =
    engine === 'sqlite'
      ? { engine, path: join(work, 'sqlite', 'rmbg.sqlite') }
      : { engine, url: await scratchDatabase(admin) };
  if (engine === 'sqlite') mkdirSync(join(work, 'sqlite'), { recursive: true });
  let store = await openStore(target);
  const grant = 10 * charges + 2 * rows;
  // Short ledgers stay short: each of these accounts starts with 10 rows and takes 10 of the timed charges.
  const shorts = [];
  for (let n = 0; n < Math.ceil((charges + 20) / 10); n++) {
    const account = (await store.createAccountWithKey({ plan: 'pro', credits: grant })).accountId;
    for (let i = 0; i < 9; i++) {
      await store.charge(account, 1, { requestId: `short-${n}-${i}`, owner: 'bench', expiresAt: Date.now() + 60_000 });
      await store.deliver(`short-${n}-${i}`, undefined);
    }
    shorts.push(account);
  }
  const long = (await store.createAccountWithKey({ plan: 'pro', credits: grant })).accountId;
  // The long ledger, written beside the store as rmbg would have over the years (with its kept balance).
  const fillStarted = performance.now();
  if (engine === 'sqlite') {
    await store.close();
    const db = await openSqlite(target.path);
    db.prepare(FILL.sqlite(rows)).run(long);
    db.prepare('UPDATE accounts SET payg_credits = payg_credits - ? WHERE id = ?').run(rows - 1, long);
    db.close();
    store = await openStore(target);
  } else {
    const client = new pg.Client(target.url);
    await client.connect();
    await client.query(FILL.postgres(rows), [long]);
    await client.query('UPDATE accounts SET payg_credits = payg_credits - $1 WHERE id = $2', [rows - 1, long]);
    await client.query('VACUUM ANALYZE credit_ledger');
    await client.end();
  }
  const fillSeconds = (performance.now() - fillStarted) / 1000;

  // Alternating accounts, so both see the same machine state; each charge is delivered (untimed) to close its lease.
  const times = { short: [], long: [] };
  for (let i = 0; i < charges + 20; i++) {
    for (const [side, account] of [
      ['short', shorts[Math.floor(i / 10)]],
      ['long', long],
    ]) {
      const requestId = `bench-${account}-${i}`;
      const started = performance.now();
      const charged = await store.charge(account, 1, { requestId, owner: 'bench', expiresAt: Date.now() + 60_000 });
      const elapsed = performance.now() - started;
      if (!charged.ok) throw new Error('charge refused');
      if (i >= 20) times[side].push(elapsed); // the first 20 warm up
      await store.deliver(requestId, undefined);
    }
  }
  const ledgerRows = async (account) => {
    if (engine === 'sqlite') {
      const db = await openSqlite(target.path, { readonly: true });
      try {
        return db.prepare('SELECT COUNT(*) AS n FROM credit_ledger WHERE account_id = ?').get(account).n;
      } finally {
        db.close();
      }
    }
    const client = new pg.Client(target.url);
    await client.connect();
    try {
      return Number(
        (await client.query('SELECT COUNT(*) AS n FROM credit_ledger WHERE account_id = $1', [account])).rows[0].n,
      );
    } finally {
      await client.end();
    }
  };
  // What each charge read before: the sum of the account's ledger (timed outside the store, 20 runs).
  const oldSum = async (account) => {
    const runs = [];
    if (engine === 'sqlite') {
      const db = await openSqlite(target.path, { readonly: true });
      const statement = db.prepare(OLD_BALANCE);
      for (let i = 0; i < 20; i++) {
        const started = performance.now();
        statement.all(account);
        runs.push(performance.now() - started);
      }
      db.close();
    } else {
      const client = new pg.Client(target.url);
      await client.connect();
      for (let i = 0; i < 20; i++) {
        const started = performance.now();
        await client.query(OLD_BALANCE.replace('?', '$1'), [account]);
        runs.push(performance.now() - started);
      }
      await client.end();
    }
    return median(runs);
  };
  const audit = await store.auditBalances();
  await store.close();
  if (audit.length > 0) throw new Error(`kept balances differ from the ledger: ${JSON.stringify(audit)}`);
  results.push({
    engine,
    fillSeconds,
    short: { rows: await ledgerRows(shorts.at(-1)), charge: median(times.short), sum: await oldSum(shorts.at(-1)) },
    long: { rows: await ledgerRows(long), charge: median(times.long), sum: await oldSum(long) },
  });
}

const f = (value) => `${value.toFixed(2)} ms`;
console.log(
  `Charge cost by ledger length: median of ${charges} charges per account, alternating (filling ${rows.toLocaleString('en-US')} rows took ${results.map((r) => `${r.fillSeconds.toFixed(1)} s on ${r.engine}`).join(', ')}).\n`,
);
console.log(
  table(
    [
      'store',
      'ledger rows at the end (short / long)',
      'charge, short',
      'charge, long',
      'long ÷ short',
      'old balance sum, short',
      'old balance sum, long',
    ],
    results.map((r) => [
      r.engine,
      `${r.short.rows.toLocaleString('en-US')} / ${r.long.rows.toLocaleString('en-US')}`,
      f(r.short.charge),
      f(r.long.charge),
      ratio(r.long.charge / r.short.charge),
      f(r.short.sum),
      f(r.long.sum),
    ]),
  ),
);
for (const cleanup of cleanups) await cleanup();
