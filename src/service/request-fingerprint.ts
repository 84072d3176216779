// The fingerprint that tells whether a request repeated under an Idempotency-Key is the same request:
// the image (its bytes, or the URL as given) and the options that change the result.

import { createHash } from 'node:crypto';
import { canonicalOptions, type RemoveOptions } from '../api/options.js';
import type { ImageSource } from '../api/request-parsing.js';

export function requestFingerprint(source: ImageSource, options: RemoveOptions): string {
  const hash = createHash('sha256');
  // File and base64 uploads of the same bytes are the same image; a URL is a different kind of input,
  // tagged so that no byte string can collide with a URL string.
  if (source.kind === 'url') hash.update('url\0').update(source.url, 'utf8');
  else hash.update('bytes\0').update(source.data);
  hash.update('\0').update(canonicalOptions(options), 'utf8');
  return hash.digest('hex');
}
