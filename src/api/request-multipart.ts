// Fields of a multipart/form-data body (busboy): image_file is the only file part, every other part is text.
// The file part is cut off at LIMITS.maxImageBytes and reading stops there; nothing past a limit is buffered.

import busboy from 'busboy';
import type { Readable } from 'node:stream';
import { RmbgError } from './errors.js';
import { LIMIT_TEXT, LIMITS, OPTION_FIELDS, SOURCE_FIELDS, parseRemoveOptions } from './options.js';
import { streamBody, type BodyLimits } from './request-body.js';
import { addField, emptyFields, type CollectedFields } from './request-fields.js';
import { MAX_BASE64_CHARS, MAX_MULTIPART_PARTS } from './request-limits.js';

const TEXT_FIELDS: ReadonlySet<string> = new Set([...SOURCE_FIELDS, ...OPTION_FIELDS.map((f) => f.name)]);

function fileTooLarge(): RmbgError {
  return new RmbgError(
    'file_too_large',
    `image_file exceeds ${LIMITS.maxImageBytes} bytes (${LIMIT_TEXT.maxImageBytes}); send a smaller image`,
  );
}

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
    parser = busboy({
      headers: { 'content-type': contentType },
      // busboy signals 'limit' when a file reaches fileSize, so one byte more means "over the limit".
      limits: { fileSize: LIMITS.maxImageBytes + 1, fieldSize: MAX_BASE64_CHARS, parts: MAX_MULTIPART_PARTS },
    });
  } catch (error) {
    return Promise.reject(
      new RmbgError('invalid_request', `multipart/form-data needs a boundary parameter: ${(error as Error).message}`, {
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
      stream.on('limit', () => fail(fileTooLarge()));
      stream.on('end', () => {
        if (!settled) fields.imageFile = Buffer.concat(chunks);
      });
    });
    parser.on('field', (name, value, info) =>
      guard(() => {
        if (info.nameTruncated)
          throw new RmbgError('invalid_request', `a field name is longer than 100 bytes: '${name}…'`);
        if (info.valueTruncated) {
          if (name === 'image_file_b64')
            throw new RmbgError(
              'file_too_large',
              `image_file_b64 exceeds ${MAX_BASE64_CHARS} characters, the base64 form of ${LIMIT_TEXT.maxImageBytes}`,
            );
          throw new RmbgError('invalid_request', `field '${name}' is too long`);
        }
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
