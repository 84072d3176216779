// Answers being sent, bounded: each in time (a client that does not read its answer within --send-timeout is cut
// off, and the answer's memory freed with its socket) and all together in bytes (while the answers not yet handed
// to the kernel hold more than the budget, new image requests are refused before any work).

import type { ServerResponse } from 'node:http';
import { RmbgError } from '../api/errors.js';
import { whenAnswerGone } from './answer-gone.js';

/**
 * The bytes of answers still being sent, across the server, past which new image requests get 503: about eight of
 * the largest answers (a 22 MiB image as JSON is 30 MB), and many times what clients that read hold at once.
 */
export const UNSENT_ANSWERS_MAX_BYTES = 256 * 1024 * 1024;
/** Retry-After while the budget is full: answers leave within the send timeout, most within a second or two. */
const BUSY_RETRY_SECONDS = 2;

export class AnswerSends {
  #unsentBytes = 0;

  /** `sendTimeoutMs`: the row sendTimeout of src/settings; `maxBytes`: the budget (tests may give a smaller one). */
  constructor(
    readonly sendTimeoutMs: number,
    readonly maxBytes: number = UNSENT_ANSWERS_MAX_BYTES,
  ) {}

  get unsentBytes(): number {
    return this.#unsentBytes;
  }

  /** Refuses (503 service_busy) while the answers being sent hold the whole budget. */
  checkRoom(): void {
    if (this.#unsentBytes < this.maxBytes) return;
    throw new RmbgError(
      'service_busy',
      'the server is still sending earlier answers to clients that read them slowly; retry shortly',
      { retryAfterSeconds: BUSY_RETRY_SECONDS },
    );
  }

  /**
   * Counts an answer of `bytes` from now until it is gone (whenAnswerGone: all of it handed to the kernel, or its
   * connection closed); past the send timeout its connection is destroyed, which frees what it held.
   */
  track(response: ServerResponse, bytes: number): void {
    if (response.writableFinished || response.destroyed) return;
    this.#unsentBytes += bytes;
    // destroy?.(): fastify's inject() hands in a socket stand-in without it.
    const timer = setTimeout(() => (response.socket ?? response.req?.socket)?.destroy?.(), this.sendTimeoutMs);
    timer.unref();
    whenAnswerGone(response, () => {
      clearTimeout(timer);
      this.#unsentBytes -= bytes;
    });
  }
}

/** The bytes of a payload fastify is about to write (a stream counts as none: the server sends none unbounded). */
export function payloadBytes(payload: unknown): number {
  if (typeof payload === 'string') return Buffer.byteLength(payload);
  if (Buffer.isBuffer(payload)) return payload.length;
  return 0;
}
