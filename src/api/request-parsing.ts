// Parses the body of POST /v1.0/removebg into one image source and validated options, with no HTTP framework
// involved: the Content-Type picks the encoding, request-limits.ts bounds the bytes, request-encodings.ts yields
// the fields, and the rules shared by every encoding (one source, strict base64, the options) are applied here.

import type { Readable } from 'node:stream';
import { describeValue } from './describe-value.js';
import { RmbgError } from './errors.js';
import { parseImageUrl } from './image-url-rules.js';
import { mediaTypeOf, REQUEST_ENCODINGS, type RequestEncoding } from './media-types.js';
import { isEmpty, parseRemoveOptions, SOURCE_FIELDS, type RemoveOptions } from './options.js';
import {
  collectJsonFields,
  collectMultipartFields,
  collectUrlencodedFields,
  type CollectedFields,
} from './request-encodings.js';
import { checkDecodedImageBytes, checkDeclaredBodyLength, MAX_BODY_BYTES, readBody } from './request-limits.js';

export interface IncomingBody {
  contentType: string | undefined;
  /** The Content-Length header, when the client sent one: an oversized body is refused before reading. */
  contentLength: number | undefined;
  body: Readable;
  /** Stops reading the body; its reason is what the promise rejects with (e.g. 408 request_timeout). */
  signal?: AbortSignal | undefined;
}

/** The three image sources of a removal request (api-spec: exactly one per request). */
export type ImageSource =
  | { kind: 'file'; data: Buffer }
  | { kind: 'base64'; data: Buffer }
  | { kind: 'url'; url: string };

export interface ParsedRemoveRequest {
  source: ImageSource;
  options: RemoveOptions;
}

/** Which accepted encoding a Content-Type header names; anything else is 415. */
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

/** Throws RmbgError: 415 unsupported_content_type, 400 for every malformed or refused body. */
export async function parseRemoveRequest(incoming: IncomingBody): Promise<ParsedRemoveRequest> {
  const encoding = requestEncodingOf(incoming.contentType);
  const maxBytes = MAX_BODY_BYTES[encoding];
  checkDeclaredBodyLength(incoming.contentLength, maxBytes);
  const limits = { maxBytes, signal: incoming.signal };
  const fields =
    encoding === 'multipart'
      ? await collectMultipartFields(incoming.body, incoming.contentType as string, limits)
      : encoding === 'json'
        ? collectJsonFields(await readBody(incoming.body, limits))
        : collectUrlencodedFields(await readBody(incoming.body, limits));
  return toParsedRequest(fields, encoding);
}

function textSource(name: string, value: unknown): string | undefined {
  if (isEmpty(value)) return undefined;
  if (typeof value !== 'string')
    throw new RmbgError('invalid_request', `${name} must be a string; got ${describeValue(value)}`);
  return value;
}

function toParsedRequest(fields: CollectedFields, encoding: RequestEncoding): ParsedRemoveRequest {
  if (encoding !== 'multipart' && fields.values.has('image_file')) {
    throw new RmbgError(
      'invalid_request',
      'image_file is accepted only in multipart/form-data bodies; in this body send image_file_b64 (base64) or image_url instead',
    );
  }
  const options = parseRemoveOptions(Object.fromEntries(fields.values));

  // Empty sources count as absent, like empty option values: HTML forms send every field.
  const url = textSource('image_url', fields.values.get('image_url'));
  const base64 = textSource('image_file_b64', fields.values.get('image_file_b64'));
  const file = fields.imageFile !== undefined && fields.imageFile.length > 0 ? fields.imageFile : undefined;
  const given = [file && 'image_file', url && 'image_url', base64 && 'image_file_b64'].filter((name): name is string =>
    Boolean(name),
  );
  if (given.length === 0) {
    throw new RmbgError('missing_image_source', `send exactly one of ${SOURCE_FIELDS.join(', ')}; none was given`);
  }
  if (given.length > 1) {
    throw new RmbgError(
      'multiple_image_sources',
      `send exactly one of ${SOURCE_FIELDS.join(', ')}; got ${given.join(' and ')}`,
    );
  }

  let source: ImageSource;
  if (file) source = { kind: 'file', data: file };
  else if (url) {
    parseImageUrl(url); // a URL that can never be fetched is refused now, before any charge
    source = { kind: 'url', url };
  } else source = { kind: 'base64', data: decodeImageBase64(base64 as string) };
  return { source, options };
}

const FORBIDDEN_BASE64 = /[^A-Za-z0-9+/=]/;

/** Plain padded standard base64 only: Buffer.from skips bad characters, turning a client bug into a corrupt image. */
function decodeImageBase64(text: string): Buffer {
  if (/^data:/i.test(text)) {
    throw new RmbgError(
      'invalid_base64',
      "image_file_b64 must be plain base64 without a data-URL prefix; remove everything up to and including the comma of 'data:...;base64,'",
    );
  }
  const forbidden = FORBIDDEN_BASE64.exec(text);
  if (forbidden) {
    const char = forbidden[0];
    const hint = /\s/.test(char)
      ? ' (send the base64 on one line, e.g. base64 -w0; in urlencoded bodies send + as %2B)'
      : char === '-' || char === '_'
        ? ' (URL-safe base64 is not accepted: use + and / instead of - and _)'
        : '';
    throw new RmbgError(
      'invalid_base64',
      `image_file_b64 contains ${JSON.stringify(char)} at position ${forbidden.index}; only A-Z, a-z, 0-9, +, / and = padding are allowed${hint}`,
    );
  }
  if (text.length % 4 !== 0) {
    throw new RmbgError(
      'invalid_base64',
      `image_file_b64 must be padded with = to a multiple of 4 characters; got ${text.length} characters`,
    );
  }
  const firstPad = text.indexOf('=');
  const padding = firstPad === -1 ? 0 : text.length - firstPad;
  if (padding > 2 || (padding > 0 && !/^={1,2}$/.test(text.slice(firstPad)))) {
    throw new RmbgError(
      'invalid_base64',
      'image_file_b64 may only end with one or two = padding characters; = was found elsewhere',
    );
  }
  checkDecodedImageBytes((text.length / 4) * 3 - padding);
  return Buffer.from(text, 'base64');
}
