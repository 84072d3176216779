// Reads the API's request headers from Node's header object (repeated headers can arrive as arrays).

import type { IncomingHttpHeaders } from 'node:http';

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
