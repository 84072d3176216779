// A floor on how fast a request body arrives: a body that drips (a byte a second) holds an upload place until
// the body timeout (30 s); past a short grace, one slower than the floor on average is cut at once with 408.

import type { IncomingMessage } from 'node:http';
import { RmbgError } from '../api/errors.js';

/** Time a body may take before its pace is judged: a small body has arrived by then on any link. */
export const BODY_PACE_GRACE_MS = 5000;
/** The slowest average a body may arrive at past the grace (64 kbit/s, slower than any phone network). */
export const BODY_MIN_BYTES_PER_SECOND = 8 * 1024;
/** How often the pace is checked. */
const CHECK_EVERY_MS = 1000;

/**
 * Calls `cut` with a 408 request_timeout once the body, counted by its connection's bytes read since now, arrives
 * slower than the floor past the grace. Returns the function that stops watching (call it when the body is read).
 */
export function watchBodyPace(raw: IncomingMessage, cut: (reason: RmbgError) => void): () => void {
  const socket = raw.socket as IncomingMessage['socket'] | null;
  // fastify's inject() has no real socket: nothing to pace.
  if (!socket || typeof socket.bytesRead !== 'number') return () => undefined;
  const started = performance.now();
  const readBefore = socket.bytesRead;
  const timer = setInterval(() => {
    const elapsedMs = performance.now() - started;
    if (elapsedMs < BODY_PACE_GRACE_MS) return;
    if (socket.bytesRead - readBefore >= (BODY_MIN_BYTES_PER_SECOND * elapsedMs) / 1000) return;
    clearInterval(timer);
    cut(
      new RmbgError(
        'request_timeout',
        `the request body arrived slower than ${BODY_MIN_BYTES_PER_SECOND / 1024} KiB/s on average; send it without pauses`,
      ),
    );
  }, CHECK_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
