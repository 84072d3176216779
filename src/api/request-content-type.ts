// Which of the three accepted request encodings a Content-Type header names; anything else is 415.

import { RmbgError } from './errors.js';
import { mediaTypeOf } from './media-types.js';

export const REQUEST_ENCODINGS = {
  multipart: 'multipart/form-data',
  json: 'application/json',
  urlencoded: 'application/x-www-form-urlencoded',
} as const;

export type RequestEncoding = keyof typeof REQUEST_ENCODINGS;

export function requestEncodingOf(contentType: string | undefined): RequestEncoding {
  const mediaType = mediaTypeOf(contentType);
  for (const [encoding, name] of Object.entries(REQUEST_ENCODINGS)) {
    if (mediaType === name) return encoding as RequestEncoding;
  }
  const allowed = Object.values(REQUEST_ENCODINGS).join(', ');
  throw new RmbgError(
    'unsupported_content_type',
    mediaType === ''
      ? `the request has no Content-Type; send one of ${allowed}`
      : `Content-Type '${mediaType}' is not accepted; send one of ${allowed}`,
  );
}
