// Fuzzing the real `rmbg serve` with fast-check: hostile bodies in every encoding and odd headers (see
// request-arbitraries.ts). Property: every answer is a documented status with a well-formed error body of
// the error table, never a 500, never a hang, and no credit moves. A short seeded run is part of `npm test`;
// `npm run fuzz` runs 10,000 requests (FUZZ_RUNS, FUZZ_SEED) and prints what it sent and saw.

import http from 'node:http';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS, isErrorCode, wireErrorCodes } from '../../src/api/errors.js';
import { STORE_FILE } from '../../src/store/index.js';
import { balance, createKey, ensureBuilt, startIdentityServe, tempDataDir } from '../helpers/serve-harness.js';
import type { ServeProcess } from '../helpers/serve-harness.js';
import { requestArbitrary, type FuzzRequest } from '../helpers/request-arbitraries.js';
import { sqliteRows } from '../helpers/sqlite-file.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
/** Longer than any timeout of the server's own (body 3 s here): an answer later than this is a hang. */
const HANG_MS = 15_000;
const DOCUMENTED = new Set([200, 400, 402, 403, 404, 405, 408, 409, 415, 429, 503]);
const WIRE_CODES = new Set<string>(wireErrorCodes());

let server: ServeProcess;
let dataDir: string;
let keys: string[];
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

beforeAll(async () => {
  await ensureBuilt();
  dataDir = tempDataDir();
  // Nothing may be charged: a key without credits (a valid request ends at 402) and a free-plan key (403).
  // Limits are lifted so the fuzzer meets the parsers, not the throttles. No request reaches the model: a tiny
  // identity model starts in a moment.
  server = await startIdentityServe(dataDir, [
    '--rate-limit',
    '100000000',
    '--max-auth-failures',
    '100000000',
    '--max-in-flight-per-key',
    '1000',
    '--body-timeout',
    '3',
  ]);
  keys = [(await createKey(dataDir, 0)).key, (await createKey(dataDir, 0, 'free')).key];
}, 120_000);

afterAll(async () => {
  agent.destroy();
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

function send(request: FuzzRequest): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const outgoing = http.request(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      agent,
      headers: { ...request.headers, 'content-length': String(request.body.length) },
      timeout: HANG_MS,
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${HANG_MS} ms`)));
    outgoing.on('error', reject);
    outgoing.on('response', (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (text: string) => (body += text));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body, ms: performance.now() - started }));
      response.on('error', reject);
    });
    outgoing.end(request.body);
  });
}

function checkErrorBody(status: number, body: string): string {
  const parsed = JSON.parse(body) as { errors?: Array<{ title?: unknown; code?: unknown; detail?: unknown }> };
  expect(parsed.errors).toHaveLength(1);
  const [error] = parsed.errors as [{ title?: unknown; code?: unknown; detail?: unknown }];
  expect(typeof error.title).toBe('string');
  expect(typeof error.detail).toBe('string');
  expect(isErrorCode(error.code) && WIRE_CODES.has(error.code)).toBe(true);
  expect(ERRORS[error.code as keyof typeof ERRORS].status).toBe(status);
  return error.code as string;
}

describe(`fuzzing POST /v1.0/removebg (${RUNS} requests, seed ${SEED})`, () => {
  it('answers every request with a documented status and error body, never 500, never hangs, moves no credit', async () => {
    const statuses = new Map<number, number>();
    const codes = new Map<string, number>();
    const kinds = new Map<string, number>();
    let slowest = 0;
    await fc.assert(
      fc.asyncProperty(requestArbitrary(keys), async (request) => {
        const answer = await send(request);
        kinds.set(request.kind, (kinds.get(request.kind) ?? 0) + 1);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        slowest = Math.max(slowest, answer.ms);
        expect(DOCUMENTED.has(answer.status), `status ${answer.status}: ${answer.body}`).toBe(true);
        if (answer.status !== 200) {
          const code = checkErrorBody(answer.status, answer.body);
          codes.set(code, (codes.get(code) ?? 0) + 1);
        }
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    for (const key of keys.slice(0, 1))
      expect(await balance(server.url, key)).toEqual({ total: 0, subscription: 0, payg: 0 });
    expect(
      await sqliteRows(join(dataDir, STORE_FILE), "SELECT COUNT(*) AS n FROM credit_ledger WHERE kind != 'grant'"),
    ).toEqual([{ n: 0 }]);
    if (process.env.FUZZ_RUNS) {
      const show = (map: Map<unknown, number>) =>
        JSON.stringify(Object.fromEntries([...map].sort((a, b) => b[1] - a[1])));
      process.stdout.write(
        `fuzz: ${RUNS} requests, seed ${SEED}\n  inputs: ${show(kinds)}\n  statuses: ${show(statuses)}\n  codes: ${show(codes)}\n  slowest answer: ${Math.round(slowest)} ms\n`,
      );
    }
  });
});
