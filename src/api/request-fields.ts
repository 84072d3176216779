// From the fields of a request (any encoding) to what the service takes: one image source and the
// validated options. The rules shared by multipart, JSON and urlencoded live here, once.

import { describeValue } from './describe-value.js';
import type { ImageSource } from './image-source.js';
import { parseImageUrl } from './image-url-rules.js';
import { RmbgError } from './errors.js';
import { isEmpty, parseRemoveOptions, SOURCE_FIELDS, type RemoveOptions } from './options.js';
import { decodeImageBase64 } from './request-base64.js';
import type { RequestEncoding } from './request-content-type.js';

export interface CollectedFields {
  /** Each field once: strings from forms, any JSON value from JSON bodies. image_file is never here. */
  values: Map<string, unknown>;
  /** The image_file part; multipart only. */
  imageFile: Buffer | undefined;
}

export interface ParsedRemoveRequest {
  source: ImageSource;
  options: RemoveOptions;
}

export function emptyFields(): CollectedFields {
  return { values: new Map(), imageFile: undefined };
}

/** Adds a field, refusing a second value: which one would win is the client's bug, not ours to guess. */
export function addField(fields: CollectedFields, name: string, value: unknown): void {
  if (fields.values.has(name)) {
    throw new RmbgError('invalid_request', `field '${name}' appears more than once; send each field at most once`);
  }
  fields.values.set(name, value);
}

function textSource(name: string, value: unknown): string | undefined {
  if (isEmpty(value)) return undefined;
  if (typeof value !== 'string')
    throw new RmbgError('invalid_request', `${name} must be a string; got ${describeValue(value)}`);
  return value;
}

export function toParsedRequest(fields: CollectedFields, encoding: RequestEncoding): ParsedRemoveRequest {
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
