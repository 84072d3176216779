// The API's headers as the server reads and writes them: request headers from Node's header object (a repeated
// header can arrive as an array), and the X-RateLimit-* of an answer to an authenticated caller.

import type { IncomingHttpHeaders } from 'node:http';
import { HEADERS } from '../api/response-headers.js';
import type { RateLimitInfo } from '../api/wire-types.js';

export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The declared body length, or undefined when absent (chunked) or not a number. */
export function contentLengthOf(headers: IncomingHttpHeaders): number | undefined {
  const value = headers['content-length'];
  if (value === undefined) return undefined;
  const length = Number(value);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/** X-RateLimit-Reset is seconds until the window resets (what RateLimitInfo and the client use), not a timestamp. */
export function rateLimitHeaders(info: RateLimitInfo | undefined): Record<string, string> {
  if (!info) return {};
  return {
    [HEADERS.rateLimitLimit]: String(info.limit),
    [HEADERS.rateLimitRemaining]: String(info.remaining),
    [HEADERS.rateLimitReset]: String(info.resetSeconds),
  };
}
