// What happens to the rest of a request body when the answer (an error) is sent before it was read:
// it is read and thrown away, within limits, so the client can finish sending and then read the answer.

import type { IncomingMessage } from 'node:http';
import { ERRORS, type RmbgError } from '../api/errors.js';
import { MAX_BODY_BYTES } from '../api/request-limits.js';

/** No accepted request is larger; past this, the client is sending something no answer will change. */
const DISCARD_MAX_BYTES = Math.max(...Object.values(MAX_BODY_BYTES));
/** A large body refused before any of it was read is held unread this long, then cut (draining it: work for no one). */
const HOLD_UNREAD_MS = 2000;
/** A body refused unread and at most this large is drained instead, so the connection stays reusable. */
const SMALL_UNREAD_BYTES = 64 * 1024;
/** A bound on a client that keeps sending slowly after its answer; the connection is then cut. */
const DISCARD_MAX_MS = 10_000;

/**
 * True when the connection must close after the answer (a large body refused unread, a body refused for its size
 * or slowness, or one declaring more than any request may carry); otherwise the rest is drained in the background.
 * Closing at once would reset the connection while the client still sends: a broken pipe instead of the answer.
 */
export function closeOrDiscardUnreadBody(raw: IncomingMessage, failure: RmbgError): boolean {
  // readableEnded too: inject()'s stand-in request has no `complete`, and an 'end' already gone never comes again.
  if (raw.complete || raw.readableEnded) return false;
  const declared = Number(raw.headers['content-length']);
  if (!raw.readableDidRead && !(declared <= SMALL_UNREAD_BYTES)) {
    holdUnread(raw);
    return true;
  }
  if (ERRORS[failure.code].closesConnection || declared > DISCARD_MAX_BYTES) return true;

  let discarded = 0;
  const cut = (): void => {
    raw.socket?.destroy();
  };
  const timer = setTimeout(cut, DISCARD_MAX_MS);
  timer.unref();
  const done = (): void => {
    clearTimeout(timer);
    raw.off('data', onData);
  };
  const onData = (chunk: Buffer): void => {
    discarded += chunk.length;
    if (discarded > DISCARD_MAX_BYTES) cut();
  };
  raw.on('data', onData);
  raw.once('end', done);
  raw.once('close', done);
  raw.resume();
  return false;
}

/**
 * Stops reading without closing: read(0) marks the body consumed (backpressure then stops the socket), and the
 * answer ends with a half-close instead of Node's destroy, which would reset the client before it reads the answer.
 */
function holdUnread(raw: IncomingMessage): void {
  raw.read(0);
  const socket = raw.socket as (typeof raw.socket & { destroySoon?: () => void }) | null;
  if (socket) socket.destroySoon = () => void socket.end();
  // destroy?.(): fastify's inject() hands in a socket stand-in without it.
  const timer = setTimeout(() => raw.socket?.destroy?.(), HOLD_UNREAD_MS);
  timer.unref();
  raw.socket?.once('close', () => clearTimeout(timer));
}
