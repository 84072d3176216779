// What happens to the rest of a request body when the answer (an error) is sent before it was read:
// it is read and thrown away, within limits, so the client can finish sending and then read the answer.

import type { IncomingMessage } from 'node:http';
import { ERRORS, type RmbgError } from '../api/errors.js';
import { MAX_BODY_BYTES } from '../api/request-limits.js';

/** No accepted request is larger; past this, the client is sending something no answer will change. */
const DISCARD_MAX_BYTES = Math.max(...Object.values(MAX_BODY_BYTES));
/**
 * A body refused before any of it was read (no key, rate limit, busy, a bad query string) and larger than
 * SMALL_UNREAD_BYTES (or of unknown length) is not read at all: the answer goes out with Connection: close,
 * the server half-closes and stops reading, and cuts the connection after HOLD_UNREAD_MS. Closing at once
 * would reset it while the client still sends (a broken pipe instead of the 403); draining would let anyone
 * make the server read gigabytes for nothing. A small body is drained, so the connection stays reusable.
 */
const HOLD_UNREAD_MS = 2000;
const SMALL_UNREAD_BYTES = 64 * 1024;
/** A bound on a client that keeps sending slowly after its answer; the connection is then cut. */
const DISCARD_MAX_MS = 10_000;

/**
 * Returns true when the connection must be closed after the answer: the body was refused for its size or
 * its slowness, or declares more than any request may carry. Otherwise starts discarding the rest of the
 * body: closing at once would reset the connection while the client still sends, and many clients then
 * report a broken pipe instead of the answer. Once the body has ended, the connection stays usable.
 */
export function closeOrDiscardUnreadBody(raw: IncomingMessage, failure: RmbgError): boolean {
  if (raw.complete) return false;
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
 * Stops reading the socket without closing it. A read(0) marks the body as consumed, so Node does not drain it
 * after the answer; the body then fills its small buffer and backpressure stops reading from the socket.
 * After a Connection: close answer Node would destroy the socket at once (destroySoon), which resets it while
 * unread data waits: here it only half-closes (FIN after the answer), so the client reads the answer and
 * sees the end. The connection is cut after HOLD_UNREAD_MS (or when the client leaves), whatever the client does.
 */
function holdUnread(raw: IncomingMessage): void {
  raw.read(0);
  const socket = raw.socket as (typeof raw.socket & { destroySoon?: () => void }) | null;
  if (socket) socket.destroySoon = () => void socket.end();
  const timer = setTimeout(() => raw.socket?.destroy(), HOLD_UNREAD_MS);
  timer.unref();
  raw.socket?.once('close', () => clearTimeout(timer));
}
