// Another process holding the SQLite file's write lock (a `sqlite3` shell, a backup) must not freeze `rmbg serve`:
// its waits for the lock yield to the event loop, so /healthz answers at once and every API request is answered
// within the answer bound, a 200 or an honest 503 with Retry-After, never a 500.

import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  balance,
  call,
  createKey,
  ensureBuilt,
  SAMPLES,
  startIdentityServe,
  tempDataDir,
  type HttpAnswer,
  type ServeProcess,
} from '../helpers/serve-harness.js';

/** How long the other process holds the lock: more than two of SQLite's old 5 s busy waits. */
const HOLD_S = 12;
/** The bound of an API request's answer while the database cannot be reached (answer-bound.ts), plus sending. */
const ANSWER_WITHIN_MS = 20_000;
/** /healthz touches no store: answered at once, with room for a loaded machine. */
const HEALTH_WITHIN_MS = 1_000;

const photo = readFileSync(join(SAMPLES, 'chelsea.png'));
let server: ServeProcess;
beforeAll(async () => {
  await ensureBuilt();
  server = await startIdentityServe(tempDataDir());
});
afterAll(() => server?.stop());

/** python3's sqlite3 holds BEGIN IMMEDIATE on the file for HOLD_S, saying 'locked' once it has the lock. */
function holdWriteLock(file: string) {
  const script = [
    'import sqlite3, sys, time',
    `db = sqlite3.connect(sys.argv[1], isolation_level=None)`,
    "db.execute('BEGIN IMMEDIATE')",
    "print('locked', flush=True)",
    `time.sleep(${HOLD_S})`,
    "db.execute('COMMIT')",
  ].join('\n');
  const holder = execa('python3', ['-c', script, file], { reject: false });
  const locked = new Promise<void>((resolve, reject) => {
    holder.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('locked') && resolve());
    void holder.then((result) => reject(new Error(`the lock holder exited: ${result.stderr}`)));
  });
  return { locked, released: holder };
}

async function answerOf(url: string, init: RequestInit = {}): Promise<HttpAnswer | string> {
  return call(url, { ...init, signal: AbortSignal.timeout(ANSWER_WITHIN_MS) }).catch((error: Error) => error.message);
}

/** What a test may see of an answer: its status, and whether a 503 says when to retry. */
function shapeOf(answer: HttpAnswer | string): string {
  if (typeof answer === 'string') return `no answer (${answer})`;
  if (answer.status === 503) return answer.headers.get('retry-after') ? '503 with Retry-After' : '503 without';
  return String(answer.status);
}

it(`answers /healthz at once and every request within the bound while another process holds the write lock ${HOLD_S} s`, async () => {
  const { key } = await createKey(server.dataDir, 10);
  const before = await balance(server.url, key);
  const holder = holdWriteLock(join(server.dataDir, 'rmbg.sqlite'));
  await holder.locked;

  const headers = { 'X-API-Key': key };
  const upload = () => {
    const form = new FormData();
    form.append('image_file', new Blob([new Uint8Array(photo)]), 'photo.png');
    return answerOf(`${server.url}/v1.0/removebg`, { method: 'POST', body: form, headers });
  };
  const requests = [
    ...Array.from({ length: 5 }, () => answerOf(`${server.url}/v1.0/account`, { headers })),
    upload(),
    upload(),
  ];

  // /healthz, asked again and again while the lock is held: each answered within HEALTH_WITHIN_MS.
  let lockHeld = true;
  void holder.released.then(() => (lockHeld = false));
  const health: string[] = [];
  while (lockHeld) {
    const answer = await call(`${server.url}/healthz`, { signal: AbortSignal.timeout(HEALTH_WITHIN_MS) }).then(
      (answered) => String(answered.status),
      (error: Error) => error.name,
    );
    health.push(answer);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect((await holder.released).exitCode).toBe(0);
  expect(health.filter((answer) => answer !== '200')).toEqual([]);
  // Asked every quarter second or so: most of the hold was watched.
  expect(health.length).toBeGreaterThan(HOLD_S);

  const answers = await Promise.all(requests);
  const allowed = new Set(['200', '503 with Retry-After']);
  expect(answers.map(shapeOf).filter((shape) => !allowed.has(shape))).toEqual([]);

  // The lock gone, the store serves again, and the balance moved by exactly the removals answered 200.
  const removed = answers.slice(5).filter((answer) => typeof answer !== 'string' && answer.status === 200).length;
  expect((await balance(server.url, key)).total).toBe(before.total - removed);
}, 60_000);
