// X-RateLimit-* of an answer to an authenticated caller, rendered from the service's rate-limit data.

import { HEADERS } from '../api/response-headers.js';
import type { RateLimitInfo } from '../api/wire-types.js';

/** X-RateLimit-Reset is seconds until the window resets (what RateLimitInfo and the client use), not a timestamp. */
export function rateLimitHeaders(info: RateLimitInfo | undefined): Record<string, string> {
  if (!info) return {};
  return {
    [HEADERS.rateLimitLimit]: String(info.limit),
    [HEADERS.rateLimitRemaining]: String(info.remaining),
    [HEADERS.rateLimitReset]: String(info.resetSeconds),
  };
}
