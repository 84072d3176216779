// Clients that never read their answers (issue #38), against the real `rmbg serve` (real SQLite, 127.0.0.1, the
// tiny identity model): one paid result of about 36 MB (a 9 MP photo of noise as a PNG, as JSON), then replays of
// it whose clients read nothing. The server cuts them off at its send timeout, and a key's unread answers count
// as its requests in progress.

import { rmSync } from 'node:fs';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestWithoutReading } from '../helpers/unread-client.js';
import {
  balance,
  call,
  createKey,
  ensureBuilt,
  largeAnswerBody,
  errorCode,
  startIdentityServe,
  tempDataDir,
  type CreatedKey,
  type ServeProcess,
} from '../helpers/serve-harness.js';

const SEND_TIMEOUT_S = 10;
/** The unread clients read again this long after their answer began: past the send timeout, with room for a loaded machine. */
const READ_AGAIN_AFTER_MS = SEND_TIMEOUT_S * 1000 + 5000;

let server: ServeProcess;
let dataDir: string;
let paid: CreatedKey;
let body: Buffer;
const IDEMPOTENCY_KEY = 'unread-answers-1';

function replayHeaders(key: string): Record<string, string> {
  return {
    'x-api-key': key,
    'content-type': 'application/json',
    accept: 'application/json',
    'idempotency-key': IDEMPOTENCY_KEY,
  };
}

beforeAll(async () => {
  await ensureBuilt();
  dataDir = tempDataDir();
  server = await startIdentityServe(dataDir, ['--send-timeout', String(SEND_TIMEOUT_S), '--rate-limit', '1000']);
  body = await largeAnswerBody();
  paid = await createKey(dataDir, 10);
  const first = await call(`${server.url}/v1.0/removebg`, {
    method: 'POST',
    headers: replayHeaders(paid.key),
    body: new Uint8Array(body),
  });
  expect(first.status).toBe(200);
  expect(first.body.length).toBeGreaterThan(20 * 1024 * 1024);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('answers nobody reads', () => {
  it('10 unread replays of a 36 MB answer: every connection is closed by the send timeout; nothing is charged', async () => {
    const unread = Array.from({ length: 10 }, () =>
      requestWithoutReading(`${server.url}/v1.0/removebg`, {
        headers: replayHeaders(paid.key),
        body,
        readAgainAfterMs: READ_AGAIN_AFTER_MS,
      }),
    );
    const ends = await Promise.all(unread.map((client) => client.ended));

    // The key's 4 places in progress (--max-in-flight-per-key) take 4 answers; the others are refused at once.
    const answered = ends.filter((end) => end.status === 200);
    expect(answered).toHaveLength(4);
    expect(ends.filter((end) => end.status === 429)).toHaveLength(6);
    // Cut off at the send timeout: what arrived is what the sockets' buffers held, far from the whole answer.
    for (const end of answered) {
      expect(end.declaredBytes).toBeGreaterThan(20 * 1024 * 1024);
      expect(end.bodyBytes).toBeLessThan(end.declaredBytes / 2);
    }
    expect(await balance(server.url, paid.key)).toMatchObject({ total: 9 });
  }, 120_000);

  it("a key's unread answers are its requests in progress: its next request gets 429 until they are cut; other keys are served", async () => {
    const unread = Array.from({ length: 4 }, () =>
      requestWithoutReading(`${server.url}/v1.0/removebg`, {
        headers: replayHeaders(paid.key),
        body,
        readAgainAfterMs: READ_AGAIN_AFTER_MS,
      }),
    );
    expect(await Promise.all(unread.map((client) => client.status))).toEqual([200, 200, 200, 200]);

    // Refused before its body is read: a small body will do.
    const refused = await call(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: { 'x-api-key': paid.key, 'content-type': 'application/json' },
      body: JSON.stringify({ size: 'preview' }),
    });
    expect(refused.status).toBe(429);
    expect(errorCode(refused)).toBe('rate_limited');
    expect(refused.headers.get('retry-after')).toBe('2');

    const other = await createKey(dataDir, 1);
    const small = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#336699' } })
      .png()
      .toBuffer();
    const served = await call(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: { 'x-api-key': other.key, 'content-type': 'application/json' },
      body: JSON.stringify({ image_file_b64: small.toString('base64') }),
    });
    expect(served.status).toBe(200);

    // Once the server cut them off, the key's places are free again: the replay is served, still free.
    for (const end of await Promise.all(unread.map((client) => client.ended)))
      expect(end.bodyBytes).toBeLessThan(end.declaredBytes / 2);
    const replay = await call(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: replayHeaders(paid.key),
      body: new Uint8Array(body),
    });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('x-idempotent-replayed')).toBe('true');
    expect(await balance(server.url, paid.key)).toMatchObject({ total: 9 });
  }, 120_000);
});
