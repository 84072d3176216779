// A result without an Idempotency-Key can be received only on its own connection, so it is charged only once its
// answer was sent (issue 46): a client that leaves while it is being sent keeps its credit, and so does one whose
// server is killed meanwhile (the request's lease, held until the answer was sent, is refunded by the next start).
// Against the real `rmbg serve` (real SQLite, 127.0.0.1, the tiny identity model) and a 9 MP noise photo, whose
// answer is far larger than what the sockets' buffers hold.

import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  balance,
  createKey,
  ensureBuilt,
  largeAnswerBody,
  startIdentityServe,
  tempDataDir,
  type ServeProcess,
} from '../helpers/serve-harness.js';

const started: ServeProcess[] = [];
let body: Buffer;
beforeAll(async () => {
  await ensureBuilt();
  body = await largeAnswerBody();
}, 60_000);
afterAll(() => Promise.all(started.map((server) => server.stop())));

async function serve(dataDir: string): Promise<ServeProcess> {
  const server = await startIdentityServe(dataDir);
  started.push(server);
  return server;
}

/**
 * A removal without an Idempotency-Key whose client reads the answer's first piece and then nothing: `answering`
 * resolves with the status once the answer began (the result delivered, its sending under way).
 */
function removalLeftUnread(url: string, key: string): { answering: Promise<number>; socket: net.Socket } {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => undefined);
  const answering = new Promise<number>((resolve, reject) => {
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.pause();
      resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0));
    });
    socket.once('close', () => reject(new Error(`closed before an answer: ${head.slice(0, 200)}`)));
  });
  socket.write(
    `POST /v1.0/removebg HTTP/1.1\r\nhost: ${hostname}:${port}\r\nx-api-key: ${key}\r\n` +
      `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
  );
  socket.write(body);
  return { answering, socket };
}

it('a client that leaves while its answer is being sent is not charged', async () => {
  const server = await serve(tempDataDir());
  const { key } = await createKey(server.dataDir, 3);
  const removal = removalLeftUnread(server.url, key);
  expect(await removal.answering).toBe(200);
  removal.socket.destroy();
  // The refund follows the connection's close: read until it shows (a charge kept would fail here).
  await expect.poll(async () => (await balance(server.url, key)).total, { timeout: 20_000, interval: 200 }).toBe(3);
}, 120_000);

it('a server killed (SIGKILL) while the answer is being sent: after a restart the balance is the one before', async () => {
  const dataDir = tempDataDir();
  const first = await serve(dataDir);
  const { key } = await createKey(dataDir, 3);
  const removal = removalLeftUnread(first.url, key);
  expect(await removal.answering).toBe(200);
  await first.stop('SIGKILL');
  removal.socket.destroy();
  // The store's only server settles every lease left behind as it starts.
  const next = await serve(dataDir);
  expect((await balance(next.url, key)).total).toBe(3);
}, 120_000);
