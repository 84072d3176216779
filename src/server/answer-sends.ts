// Answers being sent, bounded: each in time (a client that reads nothing of its answer for --send-stall-timeout, or
// does not read all of it within --send-timeout, is cut off, and the answer's memory freed with its socket) and all
// together in bytes (while the answers not yet handed to the kernel hold more than the budget, new image requests
// are refused before any work).

import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { RmbgError } from '../api/errors.js';
import { whenAnswerGone } from './answer-gone.js';

/**
 * The bytes of answers still being sent, across the server, past which new image requests get 503: about eight of
 * the largest answers (a 22 MiB image as JSON is 30 MB), and many times what clients that read hold at once.
 */
export const UNSENT_ANSWERS_MAX_BYTES = 256 * 1024 * 1024;
/** Retry-After while the budget is full: answers leave within the send timeout, most within a second or two. */
const BUSY_RETRY_SECONDS = 2;
/**
 * A larger answer is handed to the socket in slices of this size, one once the one before has left for the kernel:
 * the only way to see that a client still reads (Node tells nothing of a single large write until all of it left).
 */
export const ANSWER_SLICE_BYTES = 64 * 1024;

/** The answers' time limits, in milliseconds (the rows sendTimeout and sendStallTimeout of src/settings). */
export interface SendLimits {
  /** The whole answer, from its first byte. */
  sendTimeoutMs: number;
  /** With nothing of it leaving for the client (its slices, while the answer holds the connection). */
  sendStallTimeoutMs: number;
}

export class AnswerSends {
  #unsentBytes = 0;

  /** `maxBytes`: the budget (tests may give a smaller one). */
  constructor(
    readonly limits: SendLimits,
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
   * Counts `payload`'s bytes from now until the answer is gone (whenAnswerGone: sent, or its connection closed),
   * and cuts its connection past the send timeout, or the stall timeout without progress. Returns what to send:
   * the payload itself, or a larger one as slices (its Content-Length is the caller's to set).
   */
  track(response: ServerResponse, payload: unknown): unknown {
    const bytes = payloadBytes(payload);
    if (response.writableFinished || response.destroyed) return payload;
    this.#unsentBytes += bytes;
    // destroy?.(): fastify's inject() hands in a socket stand-in without it.
    const cut = () => (response.socket ?? response.req?.socket)?.destroy?.();
    const whole = setTimeout(cut, this.limits.sendTimeoutMs);
    // An answer queued behind others of its connection (pipelined requests) has not begun: it is not stalled.
    const stall = setTimeout(() => (response.socket ? cut() : stall.refresh()), this.limits.sendStallTimeoutMs);
    whole.unref();
    stall.unref();
    response.once('socket', () => stall.refresh());
    whenAnswerGone(response, () => {
      clearTimeout(whole);
      clearTimeout(stall);
      this.#unsentBytes -= bytes;
    });
    if (bytes <= ANSWER_SLICE_BYTES || response.req?.method === 'HEAD') return payload;
    return inSlices(typeof payload === 'string' ? Buffer.from(payload) : (payload as Buffer), () => stall.refresh());
  }
}

/** The bytes of a payload fastify is about to write (a stream counts as none: the server sends none unbounded). */
export function payloadBytes(payload: unknown): number {
  if (typeof payload === 'string') return Buffer.byteLength(payload);
  if (Buffer.isBuffer(payload)) return payload.length;
  return 0;
}

/** `data` as a stream of slices; `progress` is called as each slice is asked for (the previous one has left). */
function inSlices(data: Buffer, progress: () => void): Readable {
  let offset = 0;
  return new Readable({
    // Nothing read ahead: a slice is asked for only when the response has room for it.
    highWaterMark: 0,
    read() {
      progress();
      const end = Math.min(offset + ANSWER_SLICE_BYTES, data.length);
      this.push(data.subarray(offset, end));
      offset = end;
      if (offset === data.length) this.push(null);
    },
  });
}
