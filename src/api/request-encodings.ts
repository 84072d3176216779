// From a body in each accepted encoding (JSON, urlencoded, multipart) to its fields, each name at most once.
// Sizes are bounded by request-limits.ts; what the fields mean is request-parsing.ts's business.

import busboy from 'busboy';
import type { Readable } from 'node:stream';
import { RmbgError, messageOf } from './errors.js';
import { OPTION_FIELDS, SOURCE_FIELDS, parseRemoveOptions } from './options.js';
import {
  imageFilePartTooLarge,
  MAX_MULTIPART_PARTS,
  MULTIPART_LIMITS,
  streamBody,
  textPartTooLong,
  type BodyLimits,
} from './request-limits.js';

export interface CollectedFields {
  /** Each field once: strings from forms, any JSON value from JSON bodies. image_file is never here. */
  values: Map<string, unknown>;
  /** The image_file part; multipart only. */
  imageFile: Buffer | undefined;
}

function emptyFields(): CollectedFields {
  return { values: new Map(), imageFile: undefined };
}

/** Adds a field, refusing a second value: which one would win is the client's bug, not ours to guess. */
function addField(fields: CollectedFields, name: string, value: unknown): void {
  if (fields.values.has(name)) {
    throw new RmbgError('invalid_request', `field '${name}' appears more than once; send each field at most once`);
  }
  fields.values.set(name, value);
}

// --- application/x-www-form-urlencoded

export function collectUrlencodedFields(body: Buffer): CollectedFields {
  const fields = emptyFields();
  for (const [name, value] of new URLSearchParams(body.toString('utf8'))) addField(fields, name, value);
  return fields;
}

// --- application/json: one object; JSON.parse keeps the last of duplicate keys, so keys are counted on the text.

export function collectJsonFields(body: Buffer): CollectedFields {
  const text = body.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const reason = text.trim() === '' ? 'the body is empty' : messageOf(error);
    throw new RmbgError('invalid_request', `the body is not valid JSON (${reason}); send one JSON object`, {
      cause: error,
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new RmbgError(
      'invalid_request',
      `the JSON body must be an object of fields; got ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : typeof parsed}`,
    );
  }
  const fields = emptyFields();
  const object = parsed as Record<string, unknown>;
  for (const key of topLevelKeys(text)) addField(fields, key, object[key]);
  return fields;
}

/** Index of the quote that closes the string opened at `start`. */
function endOfString(text: string, start: number): number {
  let end = text.indexOf('"', start + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes += 1;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
}

/** Keys of the top-level object of already-validated JSON text, duplicates included, in order. */
function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      const end = endOfString(text, i);
      if (depth === 1 && expectKey) {
        keys.push(JSON.parse(text.slice(i, end + 1)) as string);
        expectKey = false;
      }
      i = end;
    } else if (c === '{' || c === '[') {
      depth += 1;
      if (depth === 1) expectKey = true;
    } else if (c === '}' || c === ']') {
      depth -= 1;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return keys;
}

// --- multipart/form-data (busboy): image_file is the only file part, streamed; nothing past a limit is buffered.

const TEXT_FIELDS: ReadonlySet<string> = new Set([...SOURCE_FIELDS, ...OPTION_FIELDS.map((f) => f.name)]);

/** Why a file part under another name is refused: the schema names the field, or it is a text field sent as a file. */
function misplacedFile(name: string): RmbgError {
  if (TEXT_FIELDS.has(name))
    return new RmbgError('invalid_request', `${name} must be a text part, not a file; only image_file may be a file`);
  try {
    parseRemoveOptions({ [name]: 'file' }); // throws unknown_field or unsupported_parameter, naming the field
  } catch (error) {
    return error as RmbgError;
  }
  return new RmbgError('invalid_request', `only image_file may be a file part; got a file in '${name}'`);
}

export function collectMultipartFields(
  body: Readable,
  contentType: string,
  limits: BodyLimits,
): Promise<CollectedFields> {
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { 'content-type': contentType }, limits: MULTIPART_LIMITS });
  } catch (error) {
    return Promise.reject(
      new RmbgError('invalid_request', `multipart/form-data needs a boundary parameter: ${messageOf(error)}`, {
        cause: error,
      }),
    );
  }

  return new Promise((resolve, reject) => {
    const fields = emptyFields();
    const stop = new AbortController();
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      stop.abort(error);
      parser.removeAllListeners();
      parser.on('error', () => {}); // a destroyed parser may still report the cut-off body
      parser.destroy();
      reject(error);
    };
    const guard = (handler: () => void) => {
      try {
        handler();
      } catch (error) {
        fail(error);
      }
    };

    parser.on('file', (name, stream) => {
      // Cutting the body off destroys the open file stream with an error that the parser reports too.
      stream.on('error', () => {});
      if (name !== 'image_file') {
        stream.resume();
        return fail(misplacedFile(name));
      }
      if (fields.imageFile !== undefined) {
        stream.resume();
        return fail(
          new RmbgError('invalid_request', "field 'image_file' appears more than once; send one image per request"),
        );
      }
      const chunks: Buffer[] = [];
      fields.imageFile = Buffer.alloc(0); // claims the name at once, so a duplicate part is caught
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => fail(imageFilePartTooLarge()));
      stream.on('end', () => {
        if (!settled) fields.imageFile = Buffer.concat(chunks);
      });
    });
    parser.on('field', (name, value, info) =>
      guard(() => {
        if (info.nameTruncated)
          throw new RmbgError('invalid_request', `a field name is longer than 100 bytes: '${name}…'`);
        if (info.valueTruncated) throw textPartTooLong(name);
        if (name === 'image_file' && value !== '') {
          throw new RmbgError(
            'invalid_request',
            'image_file must be a file part with a filename (e.g. curl -F image_file=@photo.jpg), not a text field',
          );
        }
        if (name !== 'image_file') addField(fields, name, value);
      }),
    );
    parser.on('partsLimit', () =>
      fail(new RmbgError('invalid_request', `the multipart body has more than ${MAX_MULTIPART_PARTS} parts`)),
    );
    parser.on('error', (error: Error) =>
      fail(new RmbgError('invalid_request', `malformed multipart/form-data body: ${error.message}`, { cause: error })),
    );
    parser.on('close', () => {
      if (settled) return;
      settled = true;
      resolve(fields);
    });

    const signal = limits.signal ? AbortSignal.any([limits.signal, stop.signal]) : stop.signal;
    const write = (chunk: Buffer) => {
      // Honour the parser's backpressure: otherwise the whole body would queue up in its write buffer.
      if (parser.write(chunk)) return;
      body.pause();
      parser.once('drain', () => {
        if (!settled) body.resume();
      });
    };
    streamBody(body, { maxBytes: limits.maxBytes, signal }, write).then(
      () => parser.end(),
      (error: unknown) => fail(error),
    );
  });
}
