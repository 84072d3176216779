// Names and meanings of the HTTP headers of the API, for the server that sets them and the OpenAPI
// document that describes them.

import { LIMIT_TEXT, LIMITS } from './limits.js';

export const HEADERS = {
  apiKey: 'X-API-Key',
  idempotencyKey: 'Idempotency-Key',
  requestId: 'X-Request-ID',
  width: 'X-Width',
  height: 'X-Height',
  creditsCharged: 'X-Credits-Charged',
  foregroundTop: 'X-Foreground-Top',
  foregroundLeft: 'X-Foreground-Left',
  foregroundWidth: 'X-Foreground-Width',
  foregroundHeight: 'X-Foreground-Height',
  confidence: 'X-Confidence',
  rateLimitLimit: 'X-RateLimit-Limit',
  rateLimitRemaining: 'X-RateLimit-Remaining',
  rateLimitReset: 'X-RateLimit-Reset',
  replayed: 'X-Idempotent-Replayed',
  retryAfter: 'Retry-After',
} as const;

export type HeaderName = keyof typeof HEADERS;

export const HEADER_DESCRIPTIONS: Record<HeaderName, string> = {
  apiKey: 'API key of an account on an API-enabled plan (pro or enterprise).',
  idempotencyKey:
    `Optional; 1 to ${LIMITS.maxIdempotencyKeyLength} visible ASCII characters. A repeated request with the same key, ` +
    `image and options within ${LIMIT_TEXT.replayWindow} replays the first result without a new charge.`,
  requestId: 'Identifier of the request (on a replay: of the original request); keep it to investigate failures.',
  width: 'Result width in pixels.',
  height: 'Result height in pixels.',
  creditsCharged: 'Credits charged for the image (on a replay: the original charge, not charged again).',
  foregroundTop: 'Top of the foreground box on the normalized (EXIF-oriented) input canvas, in pixels.',
  foregroundLeft: 'Left of the foreground box on the normalized input canvas, in pixels.',
  foregroundWidth: 'Width of the foreground box on the normalized input canvas, in pixels.',
  foregroundHeight: 'Height of the foreground box on the normalized input canvas, in pixels.',
  confidence:
    'Extension (not in the API spec): how far the cutout can be trusted, 0 to 1 with up to 3 decimals, ' +
    "from its mask's share of ambiguous pixels and its foreground's size; under 0.5, check it. Absent " +
    'from a replay stored before it was kept.',
  rateLimitLimit: 'Requests allowed per one-minute window for this API key.',
  rateLimitRemaining: 'Requests left in the current window.',
  rateLimitReset: 'Seconds until the current window ends.',
  replayed: "'true' when the response is an idempotent replay; absent otherwise.",
  retryAfter: 'Seconds to wait before retrying (429 and 503).',
};
