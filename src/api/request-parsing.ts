// Parses the body of POST /v1.0/removebg (multipart, JSON or urlencoded) into one image source and
// validated options, with no HTTP framework involved: the server hands over headers and the body stream.

import type { Readable } from 'node:stream';
import { bodyTooLarge, readBody } from './request-body.js';
import { requestEncodingOf } from './request-content-type.js';
import { toParsedRequest, type ParsedRemoveRequest } from './request-fields.js';
import { collectJsonFields } from './request-json.js';
import { MAX_BODY_BYTES } from './request-limits.js';
import { collectMultipartFields } from './request-multipart.js';
import { collectUrlencodedFields } from './request-urlencoded.js';

export type { ParsedRemoveRequest } from './request-fields.js';

export interface IncomingBody {
  contentType: string | undefined;
  /** The Content-Length header, when the client sent one: an oversized body is refused before reading. */
  contentLength: number | undefined;
  body: Readable;
  /** Stops reading the body; its reason is what the promise rejects with (e.g. 408 request_timeout). */
  signal?: AbortSignal | undefined;
}

/** Throws RmbgError: 415 unsupported_content_type, 400 for every malformed or refused body. */
export async function parseRemoveRequest(incoming: IncomingBody): Promise<ParsedRemoveRequest> {
  const encoding = requestEncodingOf(incoming.contentType);
  const maxBytes = MAX_BODY_BYTES[encoding];
  if (incoming.contentLength !== undefined && incoming.contentLength > maxBytes) throw bodyTooLarge(maxBytes);
  const limits = { maxBytes, signal: incoming.signal };
  const fields =
    encoding === 'multipart'
      ? await collectMultipartFields(incoming.body, incoming.contentType as string, limits)
      : encoding === 'json'
        ? collectJsonFields(await readBody(incoming.body, limits))
        : collectUrlencodedFields(await readBody(incoming.body, limits));
  return toParsedRequest(fields, encoding);
}
