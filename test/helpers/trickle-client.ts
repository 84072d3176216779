// A slow client: sends the start of a request, then one byte every 250 ms until the server answers or
// closes. Resolves with the status it got (0: none) and when the server closed the connection.

import net from 'node:net';

export interface TrickleEnd {
  /** Status of the answer, 0 when the connection closed without one. */
  status: number;
  /** Milliseconds from connecting until the server closed the connection. */
  closedAfterMs: number;
}

const EVERY_MS = 250;
/** A bound on the test itself: a server that never closes fails the test instead of hanging it. */
const GIVE_UP_MS = 30_000;

export interface Trickler {
  /** Resolves once the connection is open and the start of the request was handed to it. */
  connected: Promise<void>;
  ended: Promise<TrickleEnd>;
}

export function trickle(url: URL, options: { head: string; body: string }): Trickler {
  const started = performance.now();
  let markConnected: () => void = () => undefined;
  const connected = new Promise<void>((resolve) => (markConnected = resolve));
  const ended = new Promise<TrickleEnd>((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname, () => markConnected());
    let received = '';
    const timer = setInterval(() => {
      if (!received && socket.writable) socket.write(options.body);
    }, EVERY_MS);
    const giveUp = setTimeout(() => socket.destroy(), GIVE_UP_MS);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      markConnected();
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received);
      resolve({ status: status ? Number(status[1]) : 0, closedAfterMs: performance.now() - started });
    });
    socket.write(options.head);
  });
  return { connected, ended };
}
