// Answers being sent (src/server/answer-sends.ts), on a real port of 127.0.0.1: an answer nobody reads is cut at
// the stall timeout, while one read slowly but steadily keeps the whole send timeout.

import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../../src/server/start-server.js';
import type { RemoveOutcome, Service } from '../../../src/service/index.js';
import { requestWithoutReading } from '../../helpers/unread-client.js';
import { TEST_APP_LIMITS } from '../../helpers/sharp-test-engine.js';

/** Far larger than what the sockets' buffers of a client that reads nothing hold (a few MB on loopback). */
const ANSWER_BYTES = 24 * 1024 * 1024;
const STALL_MS = 4000;
/** The slow reader's pace: the answer takes it about 8 s, yet its kernel makes room every half second or so. */
const READ_BYTES_PER_MS = 3 * 1024;

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server whose removal answers ANSWER_BYTES of image, with the stall timeout lowered to STALL_MS. */
async function serve(): Promise<URL> {
  const outcome: RemoveOutcome = {
    image: {
      data: Buffer.alloc(ANSWER_BYTES, 7),
      format: 'png',
      mimeType: 'image/png',
      width: 1,
      height: 1,
      foreground: { top: 0, left: 0, width: 1, height: 1 },
    },
    creditsCharged: 1,
    requestId: 'r',
    replayed: false,
    rateLimit: { limit: 60, remaining: 59, resetSeconds: 60 },
  };
  const service = {
    handleRemoveRequest: async () => outcome,
    getAccount: async () => {
      throw new Error('not called');
    },
  } as unknown as Pick<Service, 'handleRemoveRequest' | 'getAccount'>;
  server = await startServer({
    host: '127.0.0.1',
    port: 0,
    service,
    ...TEST_APP_LIMITS,
    sendTimeoutMs: 60_000,
    sendStallTimeoutMs: STALL_MS,
  });
  return new URL(server.url);
}

const REQUEST = { headers: { 'x-api-key': 'k', 'content-type': 'application/json' }, body: Buffer.from('{}') };

/** Reads the answer at READ_BYTES_PER_MS: steady progress, though it takes longer than the stall timeout in all. */
function readSlowly(url: URL): Promise<{ bodyBytes: number; declaredBytes: number; tookMs: number }> {
  const started = performance.now();
  const socket = net.connect(Number(url.port), url.hostname);
  let received = Buffer.alloc(0);
  return new Promise((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      socket.pause();
      setTimeout(() => socket.resume(), chunk.length / READ_BYTES_PER_MS);
    });
    socket.on('close', () => {
      const text = received.toString('latin1');
      const headEnd = text.indexOf('\r\n\r\n') + 4;
      resolve({
        bodyBytes: received.length - headEnd,
        declaredBytes: Number(/content-length: (\d+)/i.exec(text)?.[1] ?? 0),
        tookMs: performance.now() - started,
      });
    });
    socket.write(
      `POST /v1.0/removebg HTTP/1.1\r\nHost: ${url.host}\r\nX-API-Key: k\r\nContent-Type: application/json\r\n` +
        `Content-Length: 2\r\nConnection: close\r\n\r\n{}`,
    );
  });
}

describe('answers that make no progress', () => {
  it('an answer nobody reads is cut at the stall timeout, long before the send timeout', async () => {
    const url = await serve();
    const unread = requestWithoutReading(`${url.origin}/v1.0/removebg`, { ...REQUEST, readAgainAfterMs: 2 * STALL_MS });
    expect(await unread.status).toBe(200);
    const end = await unread.ended;
    // What arrived is what the sockets' buffers held when the server cut it: not the whole answer.
    expect(end.declaredBytes).toBe(ANSWER_BYTES);
    expect(end.bodyBytes).toBeLessThan(ANSWER_BYTES);
  });

  it('an answer read slowly but steadily is sent whole, though it takes longer than the stall timeout', async () => {
    const url = await serve();
    const end = await readSlowly(url);
    expect(end.declaredBytes).toBe(ANSWER_BYTES);
    expect(end.bodyBytes).toBe(ANSWER_BYTES);
    expect(end.tookMs).toBeGreaterThan(STALL_MS);
  });
});
