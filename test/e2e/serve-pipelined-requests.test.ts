// Pipelined requests (issue #46) against the real `rmbg serve` (real SQLite, 127.0.0.1, the tiny identity model):
// Node fires 'close' only on the answer that holds the socket, so what the answers queued behind it hold (unsent
// bytes, a key's places) must be given back when the connection closes; and one connection may have at most
// --max-pipelined-requests requests in progress.

import { rmSync } from 'node:fs';
import net from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createKey,
  ensureBuilt,
  errorCode,
  startIdentityServe,
  tempDataDir,
  type ServeProcess,
} from '../helpers/serve-harness.js';

const servers: ServeProcess[] = [];
let photo: string;

beforeAll(async () => {
  await ensureBuilt();
  photo = (
    await sharp({ create: { width: 64, height: 64, channels: 3, background: '#336699' } })
      .png()
      .toBuffer()
  ).toString('base64');
});

afterAll(async () => {
  for (const server of servers.splice(0)) {
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
});

async function serve(flags: string[]): Promise<ServeProcess> {
  const server = await startIdentityServe(tempDataDir(), ['--rate-limit', '1000', ...flags]);
  servers.push(server);
  return server;
}

function openApiGets(url: URL, count: number): string {
  return `GET /v1.0/openapi.json HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`.repeat(count);
}

function removal(url: URL, key: string, body: string): string {
  return (
    `POST /v1.0/removebg HTTP/1.1\r\nHost: ${url.host}\r\nX-API-Key: ${key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** A connection that writes `requests` in one go and reads nothing of the answers; close() resolves once closed. */
function pipelineUnread(url: URL, requests: string): { answering: Promise<void>; close(): Promise<void> } {
  const socket = net.connect(Number(url.port), url.hostname);
  socket.on('error', () => undefined);
  socket.write(requests);
  // The first answer's arrival says the server has parsed the requests that came with it; nothing more is read.
  const answering = new Promise<void>((resolve) =>
    socket.once('data', () => {
      socket.pause();
      resolve();
    }),
  );
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const close = () => {
    socket.destroy();
    return closed;
  };
  return { answering, close };
}

/**
 * Closes the connections and waits for a round trip of the server: it has seen the closes by then (a connection's
 * close is handled in the loop's turn that noticed it, and a new request takes more turns than one).
 */
async function closeAll(server: ServeProcess, connections: Array<{ close(): Promise<void> }>): Promise<void> {
  await Promise.all(connections.map((connection) => connection.close()));
  expect((await call(`${server.url}/healthz`)).status).toBe(200);
}

/** A removal's status, and its error body when it is not 200 (so that a failure says which refusal it was). */
async function removeWith(server: ServeProcess, key: string): Promise<string> {
  const answer = await call(`${server.url}/v1.0/removebg`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ image_file_b64: photo }),
  });
  return answer.status === 200 ? '200' : `${answer.status} ${answer.body.toString()}`;
}

describe('pipelined requests nobody reads', () => {
  it.each([
    ['at most 16 pipelined requests in progress (the default)', []],
    ['the bound lifted: the queued answers given back with their connection', ['--max-pipelined-requests', '10000']],
  ])(
    '8 connections of 1,400 pipelined GETs, never read, then closed: a removal answers 200 (%s)',
    async (_, flags) => {
      const server = await serve(flags);
      const url = new URL(server.url);
      const key = await createKey(server.dataDir, 5);
      const bursts = Array.from({ length: 8 }, () => pipelineUnread(url, openApiGets(url, 1400)));
      await Promise.all(bursts.map((burst) => burst.answering));
      await closeAll(server, bursts);

      expect(await removeWith(server, key.key)).toBe('200');
    },
    120_000,
  );

  it("a key's removals pipelined behind unread answers hold its places only until the connection closes", async () => {
    const server = await serve(['--max-pipelined-requests', '10000', '--max-in-flight-per-key', '4']);
    const url = new URL(server.url);
    const key = await createKey(server.dataDir, 10);
    const body = JSON.stringify({ image_file_b64: photo });
    // 300 answers of 28 kB that nobody reads fill the sockets' buffers: the removals' answers wait behind them.
    const pipelined = pipelineUnread(url, openApiGets(url, 300) + removal(url, key.key, body).repeat(4));

    // The 4 removals charged and done (their answers queued behind the unread ones): /metrics says so.
    for (;;) {
      const metrics = (await call(`${server.url}/metrics`)).body.toString();
      if (/^rmbg_credits_charged_total 4$/m.test(metrics) && /^rmbg_requests_in_flight 0$/m.test(metrics)) break;
    }
    // Their answers unsent, they hold the key's 4 places: a fifth request is refused.
    const refused = await call(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: { 'x-api-key': key.key, 'content-type': 'application/json' },
      body,
    });
    expect(refused.status).toBe(429);
    expect(errorCode(refused)).toBe('rate_limited');
    await closeAll(server, [pipelined]);

    expect(await removeWith(server, key.key)).toBe('200');
  }, 120_000);

  it('a connection past 16 requests in progress: 16 answers, then 429 with Connection: close, then the close', async () => {
    const server = await serve([]);
    const url = new URL(server.url);
    const socket = net.connect(Number(url.port), url.hostname);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(openApiGets(url, 20));
    await closed;

    const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
    expect(statuses).toEqual([...Array<number>(16).fill(200), 429]);
    const refused = received.slice(received.lastIndexOf('HTTP/1.1 429'));
    expect(refused).toMatch(/^connection: close\r$/im);
    expect(refused).toMatch(/^retry-after: 2\r$/im);
    const refusedBody = refused.slice(refused.indexOf('\r\n\r\n') + 4);
    expect(errorCode({ status: 429, headers: new Headers(), body: Buffer.from(refusedBody) })).toBe('rate_limited');
  }, 60_000);
});
