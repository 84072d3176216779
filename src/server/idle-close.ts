// Closing a kept-alive connection once it has been idle for the keep-alive timeout, without resetting a
// request that has already arrived on it.

import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Node destroys a kept-alive socket when its idle timer fires. The event loop can stand still for a while (the
 * engine's JS work on a large image: tensor conversion, compose; before the model moved to a worker thread,
 * inference-worker.ts, the whole model run held it for seconds); when it resumes, expired timers run before
 * the loop reads the sockets, and a request the client sent on that connection meanwhile (the connection
 * looked alive to it) is still unread in the kernel: destroying the socket then resets it (ECONNRESET)
 * instead of answering. So the close waits one turn of the loop, which
 * reads what has arrived (libuv runs the I/O poll before setImmediate callbacks), and happens only if
 * nothing did; a request that began is governed by the headers and request timeouts.
 *
 * A 'timeout' listener on the server replaces Node's own destroy (it destroys only when nobody listens).
 * Node arms this timer only between requests (the server's own timeout is 0, off), so the socket is idle.
 */
export function closeIdleConnectionsAfterPendingReads(server: Server): void {
  server.on('timeout', (socket: Socket) => {
    const readBefore = socket.bytesRead;
    setImmediate(() => {
      if (socket.bytesRead === readBefore) socket.destroy();
    });
  });
}
