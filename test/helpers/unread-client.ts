// A client that sends a whole request, reads the first piece of the answer (its status line and headers) and then
// reads nothing for a while: the answer backs up into the server. Then it reads whatever arrives until the
// connection closes, so a server that cut the answer off shows as an answer shorter than its Content-Length.
// (While it reads nothing, a paused socket cannot notice the server's close; that is why it reads again.)

import net from 'node:net';

export interface UnreadEnd {
  /** The status of the answer (0: closed before any answer). */
  status: number;
  /** Bytes of the answer's body that arrived, and those its Content-Length announced. */
  bodyBytes: number;
  declaredBytes: number;
}

export interface UnreadRequest {
  /** The status, once the answer's first piece arrived (0: closed before any answer). */
  status: Promise<number>;
  /** Resolves when the connection closed; rejects when it is still open a minute after reading resumed. */
  ended: Promise<UnreadEnd>;
}

/** A bound on the test itself: a server that never closes fails the test instead of hanging it. */
const GIVE_UP_MS = 60_000;

export function requestWithoutReading(
  url: string,
  options: { headers: Record<string, string>; body: Buffer; readAgainAfterMs: number },
): UnreadRequest {
  const { hostname, port, pathname } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  let head = '';
  let bodyBytes = 0;
  let markStatus: (status: number) => void = () => undefined;
  const status = new Promise<number>((resolve) => (markStatus = resolve));
  const statusOf = () => Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  const ended = new Promise<UnreadEnd>((resolve, reject) => {
    let giveUp: NodeJS.Timeout | undefined;
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(giveUp);
      markStatus(statusOf());
      resolve({
        status: statusOf(),
        bodyBytes,
        declaredBytes: Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0),
      });
    });
    const onData = (chunk: Buffer) => {
      if (head.includes('\r\n\r\n')) {
        bodyBytes += chunk.length;
        return;
      }
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      bodyBytes = head.length - end - 4;
      head = head.slice(0, end + 4);
      markStatus(statusOf());
      socket.pause();
      setTimeout(() => {
        socket.resume();
        giveUp = setTimeout(() => {
          reject(new Error(`the connection was still open ${GIVE_UP_MS / 1000} s after the client read again`));
          socket.destroy();
        }, GIVE_UP_MS);
      }, options.readAgainAfterMs);
    };
    socket.on('data', onData);
  });
  const lines = Object.entries({
    host: `${hostname}:${port}`,
    ...options.headers,
    'content-length': String(options.body.length),
  })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`POST ${pathname} HTTP/1.1\r\n${lines}\r\n`);
  socket.write(options.body);
  return { status, ended };
}
