// Derives the Idempotency-Key of a removal request from what it asks for, so a re-run of the same
// image with the same options (after a crash, a time-out or a retry) meets the server's replay instead of a new charge.

import { createHash } from 'node:crypto';
import { canonicalOptions, type RemoveOptions } from '../api/options.js';

const KEY_PREFIX = 'rmbg-';

/**
 * `rmbg-` + sha256 hex of (image bytes, canonical options, salt): 69 characters, within the 128 allowed.
 * A salt gives a fresh key when the old one is spent (expired, or reserved by a failed request).
 */
export function idempotencyKeyFor(image: Buffer, options: RemoveOptions, salt = ''): string {
  const imageDigest = createHash('sha256').update(image).digest('hex');
  const key = createHash('sha256')
    .update(`${imageDigest}\n${canonicalOptions(options)}\n${salt}`)
    .digest('hex');
  return `${KEY_PREFIX}${key}`;
}
