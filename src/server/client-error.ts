// Answers requests that never became a request object (malformed HTTP, headers too large or too slow)
// with the same error body as every other error, written straight to the socket as Node requires.

import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { RmbgError } from '../api/errors.js';
import { HEADERS } from '../api/response-headers.js';

function errorFor(code: string | undefined): RmbgError {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new RmbgError('request_timeout', 'the request headers were not received in time');
  if (code === 'HPE_HEADER_OVERFLOW') return new RmbgError('invalid_request', 'the request headers are too large');
  return new RmbgError('invalid_request', `the request is not valid HTTP/1.1 (${code ?? 'parse error'})`);
}

export function writeClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const failure = errorFor(error.code);
    const body = JSON.stringify(failure.toBody());
    socket.write(
      `HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `${HEADERS.requestId}: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
