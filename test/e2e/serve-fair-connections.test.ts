// One address holding connections open without finishing a request (issue #38) against the real `rmbg serve`:
// other clients, from other loopback addresses (Linux routes all of 127/8 to lo), are still served.

import { request } from 'node:http';
import net from 'node:net';
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureBuilt, startIdentityServe, tempDataDir, type ServeProcess } from '../helpers/serve-harness.js';

let server: ServeProcess | undefined;
let dataDir: string | undefined;
const opened: net.Socket[] = [];

afterEach(async () => {
  for (const socket of opened.splice(0)) socket.destroy();
  await server?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  server = undefined;
  dataDir = undefined;
});

async function serve(flags: string[] = []): Promise<URL> {
  await ensureBuilt();
  dataDir = tempDataDir();
  server = await startIdentityServe(dataDir, flags);
  return new URL(server.url);
}

interface HalfOpen {
  /** Resolves once connected and the half request line is sent. */
  connected: Promise<void>;
  /** Resolves when the server closes it: what it answered (its first line, '' for nothing) and when. */
  closed: Promise<{ answer: string; afterMs: number }>;
}

/** A connection from 127.0.0.1 that sends half a request line and stops. */
function halfOpen(url: URL): HalfOpen {
  const started = performance.now();
  let markConnected: () => void = () => undefined;
  const connected = new Promise<void>((resolve) => (markConnected = resolve));
  const socket = net.connect({ port: Number(url.port), host: '127.0.0.1', localAddress: '127.0.0.1' }, () => {
    socket.write('GET /healthz HT');
    markConnected();
  });
  opened.push(socket);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<{ answer: string; afterMs: number }>((resolve) =>
    socket.on('close', () => {
      markConnected();
      resolve({ answer: received.split('\r\n')[0] ?? '', afterMs: performance.now() - started });
    }),
  );
  return { connected, closed };
}

/** GET /healthz from another loopback address: its status, or the socket error's code. */
function healthzFrom(url: URL, localAddress: string): Promise<number | string> {
  return new Promise((resolve) => {
    const call = request({ host: '127.0.0.1', port: Number(url.port), path: '/healthz', localAddress, agent: false });
    call.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    call.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    call.end();
  });
}

describe('one address cannot take every connection', () => {
  it('127.0.0.1 opens 515 half-open connections (default limits): 127.0.0.2 is served meanwhile, 127.0.0.1 keeps 64 until the headers timeout', async () => {
    const url = await serve();
    const attack = Array.from({ length: 515 }, () => halfOpen(url));
    await Promise.all(attack.map((connection) => connection.connected));

    // Accepted after the attack's 515 (the kernel queues connections in order): the attack is counted first.
    expect(await healthzFrom(url, '127.0.0.2')).toBe(200);

    // 64 connections are 127.0.0.1's; 64 more are let in over the cap, for 2 s, to be answered (429 to a request,
    // here 408 to half of one); the rest were closed on arrival, answering nothing. The 64 got 408 at the headers
    // timeout (10 s).
    const ends = await Promise.all(attack.map((connection) => connection.closed));
    const closedOnArrival = ends.filter((end) => end.answer === '');
    const timedOut = ends.filter((end) => end.answer === 'HTTP/1.1 408 Request Timeout');
    expect(closedOnArrival).toHaveLength(515 - 2 * 64);
    expect(timedOut).toHaveLength(2 * 64);
    const afterMs = timedOut.map((end) => end.afterMs).sort((a, b) => a - b);
    for (const ms of afterMs.slice(0, 64)) expect(ms).toBeLessThan(9_000);
    for (const ms of afterMs.slice(64)) expect(ms).toBeGreaterThan(9_000);
  }, 60_000);

  it('a full server (--max-connections 40) cuts half-open requests after 2 s, not the 60 s --headers-timeout: 127.0.0.2 is then served', async () => {
    const url = await serve(['--max-connections', '40', '--headers-timeout', '60']);
    const attack = Array.from({ length: 40 }, () => halfOpen(url));
    await Promise.all(attack.map((connection) => connection.connected));

    const ends = await Promise.all(attack.map((connection) => connection.closed));
    for (const end of ends) {
      expect(end.answer).toBe('HTTP/1.1 408 Request Timeout');
      // 2 s, checked every second, plus a loaded machine's slack: well short of the 60 s headers timeout.
      expect(end.afterMs).toBeLessThan(10_000);
    }
    expect(await healthzFrom(url, '127.0.0.2')).toBe(200);
  }, 60_000);
});
