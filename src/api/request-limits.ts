// How many body bytes each request encoding may carry before reading stops with file_too_large.
// All derive from LIMITS.maxImageBytes: the image may arrive raw (a file part) or as base64 text.

import { LIMITS } from './options.js';
import type { RequestEncoding } from './request-content-type.js';

/** Room for every non-image field of a request (options, image_url, multipart part headers). */
export const FIELD_ALLOWANCE_BYTES = 64 * 1024;

/** Characters of the padded base64 form of the largest accepted image. */
export const MAX_BASE64_CHARS = Math.ceil(LIMITS.maxImageBytes / 3) * 4;

/**
 * Body ceilings per encoding. Multipart carries either a raw file part (itself capped at maxImageBytes)
 * or image_file_b64 as a text part, so its ceiling is the base64 size. JSON may escape '/' as '\/' and
 * urlencoded bodies percent-encode '+', '/' and '='; for base64 of real (compressed) images that adds
 * about 2 % and 6 %, so text bodies get an eighth more.
 */
export const MAX_BODY_BYTES: Record<RequestEncoding, number> = {
  multipart: MAX_BASE64_CHARS + FIELD_ALLOWANCE_BYTES,
  json: Math.ceil(MAX_BASE64_CHARS * 1.125) + FIELD_ALLOWANCE_BYTES,
  urlencoded: Math.ceil(MAX_BASE64_CHARS * 1.125) + FIELD_ALLOWANCE_BYTES,
};

/** Most parts a multipart body may have: every known field once, with room for empty unsupported ones. */
export const MAX_MULTIPART_PARTS = 32;
