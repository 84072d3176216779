// The HTTP contract of spec/api-spec.md, its connections (test/helpers/http-contract-server.ts: a real port, the
// real service, real SQLite): a connection after a bad request, and a kept-alive connection while the event loop
// stood still.

import { connect, type Socket } from 'node:net';
import { beforeEach, describe, expect, it } from 'vitest';
import { KEEP_ALIVE_MS } from '../../../src/server/build-app.js';
import * as http from '../../helpers/http-contract-server.js';

http.useContractServer();

describe('a connection after a bad request', () => {
  beforeEach(() => http.start());

  it('keeps serving after each bad request, on the same connection or a new one; then an image succeeds', async () => {
    const account = () => http.call('/v1.0/account', { headers: { 'X-API-Key': http.key } });
    const bad: Array<() => Promise<http.Answer>> = [
      () => http.post('{"image_url": ', { 'Content-Type': 'application/json' }),
      () =>
        http.post('--x\r\nContent-Disposition: form-data; name="size"\r\n\r\nhd', {
          'Content-Type': 'multipart/form-data; boundary=x',
        }),
      () => http.post('hello', { 'Content-Type': 'text/plain' }),
      () => http.post(http.form({ size: 'huge' })),
      () => http.post(http.form({}, Buffer.from('not an image at all'))),
      () => http.call('/v1.0/removebg', { method: 'DELETE' }),
    ];
    for (const request of bad) {
      expect((await request()).status).toBeGreaterThanOrEqual(400);
      expect((await account()).status).toBe(200);
    }
    expect((await http.post(http.form({ size: 'preview' }))).status).toBe(200);
    expect(await http.balance()).toBe(9);
  });

  it('skips a body sent with GET, and a body it refuses unread (415), instead of reading it as the next request', async () => {
    // The body looks like a request of its own: it must be skipped as body, never answered.
    const smuggled = 'GET /v1.0/smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    const get = await http.rawExchange(
      `GET /v1.0/account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${http.key}\r\nContent-Type: application/json\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}` +
        `GET /v1.0/account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${http.key}\r\nConnection: close\r\n\r\n`,
    );
    expect(http.statusLines(get)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
    expect(get).not.toContain('smuggled');
    expect(get.match(/"total":10,/g)).toHaveLength(2);

    const refused = await http.rawExchange(
      `POST /v1.0/removebg HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}` +
        `GET /v1.0/account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${http.key}\r\nConnection: close\r\n\r\n`,
    );
    expect(http.statusLines(refused)[0]).toBe('HTTP/1.1 415');
    expect(refused).not.toContain('smuggled');
    expect(
      http
        .statusLines(refused)
        .slice(1)
        .every((line) => line === 'HTTP/1.1 200'),
    ).toBe(true);
  });

  it('never drains an unread body at length: too large declared, or over 64 KiB and stalled, is answered with Connection: close and closed', async () => {
    const started = Date.now();
    const huge = await http.rawExchange(
      'POST /v1.0/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\nabc',
      30_000,
    );
    expect(http.statusLines(huge)).toEqual(['HTTP/1.1 404']);
    expect(huge).toMatch(/connection: close/i);
    const stalled = await http.rawExchange(
      'POST /v1.0/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc',
      30_000,
    );
    expect(http.statusLines(stalled)).toEqual(['HTTP/1.1 404']);
    expect(stalled).toMatch(/connection: close/i);
    // The server's own end, not the 30 s safety net above, closed both.
    expect(Date.now() - started).toBeLessThan(29_000);
  });
});

describe('kept-alive connections', () => {
  /** Blocks the event loop of this process, which runs the server, as the engine's synchronous inference does. */
  const blockEventLoop = (ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until);
  };

  it('answers a request sent on an idle kept-alive connection while the event loop stood still past the keep-alive timeout, instead of resetting it', async () => {
    await http.start();
    const url = new URL(http.server.url);
    const socket: Socket = connect(Number(url.port), url.hostname);
    let received = '';
    const answers = (n: number) => received.split('HTTP/1.1 ').length - 1 >= n && /\r\n\r\n\{.*\}$/s.test(received);
    const ended = new Promise<string>((resolve) => {
      socket.on('error', (error) => resolve(`error ${error.message}`));
      socket.on('close', () => resolve('closed'));
    });
    const receivedAnswers = (n: number) =>
      Promise.race([
        ended,
        new Promise<string>((resolve) => {
          const check = () => (answers(n) ? resolve('answered') : socket.once('data', check));
          check();
        }),
      ]);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const get = `GET /v1.0/account HTTP/1.1\r\nHost: ${url.host}\r\nX-API-Key: ${http.key}\r\n\r\n`;

    socket.write(get);
    expect(await receivedAnswers(1)).toBe('answered');
    // The server arms its keep-alive timer when its write of the answer completes: a turn of the loop after
    // the write, which can come after the client here has read it.
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    // The connection is idle and alive; the next request goes out on it, then the loop stands still past the
    // server's keep-alive timeout (an inference on a busy machine) with that request unread. Node arms the idle
    // timer at the keep-alive timeout plus a second.
    socket.write(get);
    blockEventLoop(KEEP_ALIVE_MS + 2000);
    expect(await receivedAnswers(2)).toBe('answered');
    expect(received.match(/HTTP\/1\.1 200 OK/g)).toHaveLength(2);
    socket.destroy();
  });
});
