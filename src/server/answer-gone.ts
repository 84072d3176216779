// When an answer is over for good: sent (the response's 'close'), or its connection gone. Node fires 'close' only
// on the response that holds the socket; the answers queued behind it for pipelined requests never get it when the
// connection closes, so whatever they hold (unsent bytes, a key's places, an address's count) waits on the socket.

import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Per socket, the answers waiting for it to close: one 'close' listener however many requests it pipelines. */
const waitingOnSocket = new WeakMap<Socket, Set<() => void>>();

/**
 * Calls `done` once, when `response` closes or its request's socket does, whichever comes first (at once when the
 * socket has already closed).
 */
export function whenAnswerGone(response: ServerResponse, done: () => void): void {
  // fastify's inject() hands in a socket stand-in that is no EventEmitter: the response's 'close' alone.
  const socket = response.req?.socket as Socket | undefined;
  const listening = typeof socket?.once === 'function';
  let called = false;
  const once = () => {
    if (called) return;
    called = true;
    if (listening) waitingOnSocket.get(socket)?.delete(once);
    done();
  };
  response.once('close', once);
  if (!listening) return;
  if (socket.closed) {
    once();
    return;
  }
  let waiting = waitingOnSocket.get(socket);
  if (!waiting) {
    const answers = new Set<() => void>();
    waitingOnSocket.set(socket, answers);
    socket.once('close', () => {
      for (const answer of [...answers]) answer();
    });
    waiting = answers;
  }
  waiting.add(once);
}
