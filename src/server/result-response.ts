// The success answer of POST /v1.0/removebg: its headers, and the body as image bytes or, when the
// client asks for JSON, the spec's result object.

import { HEADERS } from '../api/response-headers.js';
import type { RemoveResultJson } from '../api/wire-types.js';
import type { RemoveOutcome } from '../service/index.js';
import { rateLimitHeaders } from './rate-limit-headers.js';

/** Every header value is a string, as the spec asks; X-Idempotent-Replayed only on replays. */
export function resultHeaders(outcome: RemoveOutcome): Record<string, string> {
  const { image } = outcome;
  const headers: Record<string, string> = {
    [HEADERS.width]: String(image.width),
    [HEADERS.height]: String(image.height),
    [HEADERS.creditsCharged]: String(outcome.creditsCharged),
    [HEADERS.requestId]: outcome.requestId,
    [HEADERS.foregroundTop]: String(image.foreground.top),
    [HEADERS.foregroundLeft]: String(image.foreground.left),
    [HEADERS.foregroundWidth]: String(image.foreground.width),
    [HEADERS.foregroundHeight]: String(image.foreground.height),
    ...rateLimitHeaders(outcome.rateLimit),
  };
  if (outcome.replayed) headers[HEADERS.replayed] = 'true';
  return headers;
}

export function resultJson(outcome: RemoveOutcome): RemoveResultJson {
  const { image } = outcome;
  return {
    data: {
      result_b64: image.data.toString('base64'),
      result_width: image.width,
      result_height: image.height,
      credits_charged: outcome.creditsCharged,
      foreground_top: image.foreground.top,
      foreground_left: image.foreground.left,
      foreground_width: image.foreground.width,
      foreground_height: image.foreground.height,
    },
  };
}

/**
 * Whether the Accept header asks for the JSON result: any media range application/json with q above 0.
 * Wildcards do not count, so browsers and curl (Accept: *\/*) get the image.
 */
export function wantsJson(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    if (type !== 'application/json') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}
