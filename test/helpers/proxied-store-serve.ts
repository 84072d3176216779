// `rmbg serve` on the run's real PostgreSQL through a TCP proxy of the test's own (tcp-proxy.ts), so that a test can
// freeze or hang the database's connections under load; with the request, the load and the ledger checks the tests
// of a database gone silent share (serve-postgres-frozen, serve-postgres-hung).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { expect } from 'vitest';
import { warmKeyModel } from './fast-models.js';
import { freshDatabase, pgRows } from './postgres.js';
import { call, errorCode, rmbg, startServe, type ServeProcess } from './serve-harness.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/** One request's answer, timed from a moment the test chose (the freeze). */
export interface Answered {
  /** Seconds after that moment the request was sent (negative: before it). */
  sentAt: number;
  status: number;
  code: string | undefined;
  retryAfter: string | null;
  ms: number;
}

export interface ProxiedStoreServe {
  /** The database's own URL (not through the proxy): the test's view of the ledger. */
  url: string;
  proxy: TcpProxy;
  server: ServeProcess;
  /** A new account with `credits` and its key. */
  newKey(credits: number): Promise<{ key: string; account: string }>;
  /** One POST /v1.0/removebg of a small photo; a client that gives up after `givesUpMs` records status 0. */
  removeOnce(key: string, since: number, givesUpMs: number): Promise<Answered>;
  /** `requests` requests, one every `everyMs`, each awaited to its answer. */
  load(key: string, since: number, requests: number, everyMs: number, givesUpMs: number): Promise<Answered[]>;
  /** Once no lease of `account` is left, its balance is `credits` less one per image delivered, and every
   * account's balance its ledger's sum. */
  expectLedger(account: string, credits: number, delivered: number, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startProxiedStoreServe(maxInFlightPerKey: number): Promise<ProxiedStoreServe> {
  const url = await freshDatabase();
  const work = mkdtempSync(join(tmpdir(), 'rmbg-pg-proxied-'));
  const target = new URL(url);
  const proxy = await startTcpProxy(target.hostname, Number(target.port));
  const proxied = new URL(url);
  proxied.port = String(proxy.port);
  const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#cc6633' } })
    .jpeg()
    .toBuffer();
  const server = await startServe(join(work, 'unused-data-dir'), [
    '--store',
    proxied.toString(),
    '--model',
    warmKeyModel(),
    '--rate-limit',
    '100000',
    // Requests stay in flight while the database is silent: the key's cap of requests at once is not the point.
    '--max-in-flight-per-key',
    String(maxInFlightPerKey),
  ]);
  const count = async (sql: string, params: unknown[] = []) =>
    Number((await pgRows<{ n: string }>(url, sql, params))[0]?.n);

  async function removeOnce(key: string, since: number, givesUpMs: number): Promise<Answered> {
    const form = new FormData();
    form.append('image_file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'photo.jpg');
    const started = performance.now();
    const sentAt = (started - since) / 1000;
    try {
      const answer = await call(`${server.url}/v1.0/removebg`, {
        method: 'POST',
        headers: { 'X-API-Key': key },
        body: form,
        signal: AbortSignal.timeout(givesUpMs),
      });
      const code = answer.status === 200 ? undefined : errorCode(answer);
      const retryAfter = answer.headers.get('retry-after');
      return { sentAt, status: answer.status, code, retryAfter, ms: performance.now() - started };
    } catch {
      return { sentAt, status: 0, code: 'no answer', retryAfter: null, ms: performance.now() - started };
    }
  }

  return {
    url,
    proxy,
    server,
    async newKey(credits) {
      const created = await rmbg(['keys', 'create', '--json', '--credits', String(credits), '--store', url]);
      expect(created.exitCode, created.stderr).toBe(0);
      return JSON.parse(created.stdout) as { key: string; account: string };
    },
    removeOnce,
    async load(key, since, requests, everyMs, givesUpMs) {
      const answers: Promise<Answered>[] = [];
      // The load's schedule (not a synchronisation: the answers are awaited below).
      await new Promise<void>((resolve) => {
        const timer = setInterval(() => {
          answers.push(removeOnce(key, since, givesUpMs));
          if (answers.length === requests) {
            clearInterval(timer);
            resolve();
          }
        }, everyMs);
      });
      return Promise.all(answers);
    },
    async expectLedger(account, credits, delivered, timeoutMs) {
      await expect
        .poll(() => count('SELECT COUNT(*) AS n FROM leases WHERE account_id = $1', [account]), {
          timeout: timeoutMs,
        })
        .toBe(0);
      expect(await count('SELECT payg_credits AS n FROM accounts WHERE id = $1', [account])).toBe(credits - delivered);
      expect(
        await count(
          `SELECT COUNT(*) AS n FROM accounts a WHERE a.payg_credits + a.subscription_credits <> (SELECT COALESCE(SUM(amount), 0) FROM credit_ledger l WHERE l.account_id = a.id)`,
        ),
      ).toBe(0);
    },
    async close() {
      await server.stop('SIGKILL');
      await proxy.close();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
