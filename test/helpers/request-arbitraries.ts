// fast-check arbitraries of hostile POST /v1.0/removebg requests: broken multipart, pathological JSON,
// urlencoded junk, bad base64, odd header values, bg_color and size. Each request is raw bytes (headers
// as latin1), so nothing a client library would refuse to send is left out.

import fc from 'fast-check';
import { OPTION_FIELDS, UNSUPPORTED_FIELDS } from '../../src/api/options.js';

export interface FuzzRequest {
  /** Which generator made it (for the figures). */
  kind: string;
  headers: Record<string, string>;
  body: Buffer;
}

const FIELD_NAMES = [
  'image_file',
  'image_file_b64',
  'image_url',
  ...OPTION_FIELDS.map((field) => field.name),
  ...UNSUPPORTED_FIELDS,
];
/** A tiny but real PNG (1x1): fuzzed options around a valid image still reach option and credit checks. */
const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

const anyText = fc.string({ unit: 'binary', maxLength: 64 });
const fieldName = fc.oneof(fc.constantFrom(...FIELD_NAMES), anyText, fc.string({ minLength: 1000, maxLength: 5000 }));
const sizeValue = fc.oneof(
  fc.constantFrom('preview', 'full', 'auto', 'hd', '4k', 'small', 'regular', 'medium', '50MP', ''),
  anyText,
);
const colorValue = fc.oneof(
  fc.constantFrom(
    'red',
    'transparent',
    '#fff',
    'fff',
    '#ffff',
    '#abcdef',
    '#abcdef00',
    '#12345',
    'rgb(1,2,3)',
    '#ggg',
    '',
  ),
  fc.stringMatching(/^#?[0-9a-fA-F]{0,10}$/),
  anyText,
);
const fieldValue = fc.oneof(
  sizeValue,
  colorValue,
  anyText,
  fc.constantFrom('true', 'false', '1', '0', 'yes', 'png', 'jpg', 'zip'),
);

/** base64 the server must refuse or decode: a data-URL prefix, whitespace, bad padding, non-alphabet characters. */
const base64Value = fc.oneof(
  fc.constant(PNG_1X1.toString('base64')),
  fc.constant(`data:image/png;base64,${PNG_1X1.toString('base64')}`),
  fc.string({ maxLength: 200 }).map((text) => Buffer.from(text).toString('base64')),
  fc
    .tuple(fc.constant(PNG_1X1.toString('base64')), fc.nat(40), fc.constantFrom(' ', '\n', '\r\n', '\t'))
    .map(([b64, at, ws]) => b64.slice(0, at) + ws + b64.slice(at)),
  fc
    .tuple(fc.constant(PNG_1X1.toString('base64').replace(/=+$/, '')), fc.constantFrom('', '=', '==', '===', '===='))
    .map(([b64, pad]) => b64 + pad),
  fc.stringMatching(/^[A-Za-z0-9+/=_\-!*.]{0,300}$/),
  fc.constantFrom('data:', 'data:image/png;base64,', 'data:text/plain,hello', '====', 'A', 'AA', 'AAA'),
);

const imageUrlValue = fc.oneof(
  fc.constantFrom(
    'https://127.0.0.1/photo.jpg',
    'http://localhost/x.png',
    'https://[::1]/a',
    'https://10.0.0.1:443/x',
    'ftp://x/y',
    'https://user:pw@127.0.0.1/',
    'https://169.254.169.254/latest',
    '',
  ),
  anyText,
);

// ---- JSON ----
function deepNesting(depth: number, open: string, close: string): string {
  return `{"image_file_b64":${open.repeat(depth)}1${close.repeat(depth)}}`;
}
const jsonBody = fc.oneof(
  fc
    .record(
      { image_file_b64: base64Value, size: fc.option(sizeValue), bg_color: fc.option(colorValue) },
      { requiredKeys: ['image_file_b64'] },
    )
    .map((value) => JSON.stringify(value)),
  fc
    .record({ image_url: imageUrlValue, size: fc.option(sizeValue) }, { requiredKeys: ['image_url'] })
    .map((value) => JSON.stringify(value)),
  fc.dictionary(fieldName, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }).map((value) => JSON.stringify(value)),
  fc
    .tuple(fc.integer({ min: 1, max: 20_000 }), fc.constantFrom(['[', ']'], ['{"a":', '}']))
    .map(([depth, [open, close]]) => deepNesting(depth, open as string, close as string)),
  // Duplicate keys: JSON.parse keeps the last, the parser must refuse or pick one deterministically.
  fc
    .tuple(fc.constantFrom(...FIELD_NAMES), fieldValue, fieldValue)
    .map(
      ([name, a, b]) => `{${JSON.stringify(name)}:${JSON.stringify(a)},${JSON.stringify(name)}:${JSON.stringify(b)}}`,
    ),
  fc.constantFrom(
    '{"size":1e400}',
    '{"size":123456789012345678901234567890}',
    '{"crop":-0}',
    '{"bg_color":null}',
    '[]',
    'null',
    '"x"',
    '{',
    '{"a":1,}',
    '\u0000',
    '',
    ' ',
  ),
  fc.string({ unit: 'binary', maxLength: 300 }),
);

// ---- urlencoded ----
const urlencodedBody = fc.oneof(
  fc
    .array(fc.tuple(fieldName, fc.oneof(fieldValue, base64Value)), { maxLength: 8 })
    .map((pairs) => new URLSearchParams(pairs).toString()),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.constantFrom(
    '%',
    '%zz',
    'a=%',
    '=',
    '&&&',
    'size',
    'size=hd&size=full',
    'image_file_b64=%ZZ',
    'image_url=https%3A%2F%2F127.0.0.1%2F',
  ),
);

// ---- multipart ----
interface Part {
  name: string;
  filename: string | null;
  type: string | null;
  content: Buffer;
}
const partArb: fc.Arbitrary<Part> = fc.record({
  name: fieldName,
  filename: fc.option(fc.oneof(fc.constant('photo.png'), anyText, fc.string({ minLength: 2000, maxLength: 4000 }))),
  type: fc.option(
    fc.constantFrom(
      'image/png',
      'image/jpeg',
      'text/plain',
      'multipart/mixed; boundary=inner',
      'application/octet-stream',
      '',
    ),
  ),
  content: fc.oneof(
    fc.constant(PNG_1X1),
    fieldValue.map((value) => Buffer.from(value, 'latin1')),
    base64Value.map((value) => Buffer.from(value)),
    fc.uint8Array({ maxLength: 2000 }).map((bytes) => Buffer.from(bytes)),
    // A nested multipart body inside a part.
    fc.constant(
      Buffer.from(
        '--inner\r\nContent-Disposition: form-data; name="image_file"; filename="a.png"\r\n\r\nxx\r\n--inner--\r\n',
      ),
    ),
  ),
});

function multipartBytes(boundary: string, parts: Part[], flaw: string): Buffer {
  const crlf = flaw === 'missing-crlf' ? '\n' : '\r\n';
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename === null ? '' : `; filename="${part.filename}"`}`;
    const head = `--${boundary}${crlf}Content-Disposition: ${disposition}${crlf}${part.type === null ? '' : `Content-Type: ${part.type}${crlf}`}${crlf}`;
    chunks.push(Buffer.from(head, 'latin1'), part.content, Buffer.from(crlf));
  }
  if (flaw !== 'no-final-boundary')
    chunks.push(Buffer.from(`--${flaw === 'wrong-final-boundary' ? `${boundary}x` : boundary}--${crlf}`));
  return Buffer.concat(chunks);
}

const multipartRequest = fc
  .record({
    boundary: fc.oneof(fc.constant('rmbgfuzz'), fc.stringMatching(/^[A-Za-z0-9'()+_,\-./:=?]{1,70}$/)),
    declared: fc.option(fc.oneof(fc.constant('other'), fc.constant(''), fc.string({ maxLength: 100 }))),
    parts: fc.array(partArb, { maxLength: 5 }),
    flaw: fc.constantFrom('none', 'none', 'missing-crlf', 'no-final-boundary', 'wrong-final-boundary'),
  })
  .map(({ boundary, declared, parts, flaw }) => ({
    contentType: `multipart/form-data; boundary=${declared ?? boundary}`,
    body: multipartBytes(boundary, parts, flaw),
  }));

// ---- headers ----
const idempotencyKey = fc.option(
  fc.oneof(
    fc.constantFrom('a'.repeat(128), 'b'.repeat(129), '', ' ', 'ключ-1', 'key with spaces', 'k\u00e9y'),
    fc.string({ minLength: 1, maxLength: 140 }),
  ),
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/x-www-form-urlencoded',
  'text/plain',
  'image/png',
  'application/JSON',
  'multipart/form-data',
  '',
);

/** Header values go out as latin1 bytes: a non-ASCII value arrives as its UTF-8 bytes. */
function headerBytes(value: string): string {
  // Control characters cannot be sent at all (Node refuses them, and so does the HTTP grammar).
  // eslint-disable-next-line no-control-regex
  return Buffer.from(value.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, ''), 'utf8').toString('latin1');
}

export function requestArbitrary(apiKeys: string[]): fc.Arbitrary<FuzzRequest> {
  // Mostly the first (valid) key: a refused key never gets its body read, so it would not reach the parsers.
  const [mainKey, ...otherKeys] = apiKeys as [string, ...string[]];
  const apiKey = fc.option(
    fc.oneof(
      { arbitrary: fc.constant(mainKey), weight: 12 },
      { arbitrary: fc.constantFrom(mainKey, ...otherKeys), weight: 1 },
      { arbitrary: fc.constantFrom('', 'rmbg_wrong', 'x'.repeat(5000)), weight: 1 },
      { arbitrary: anyText, weight: 1 },
    ),
    { freq: 15 },
  );
  const encoded: fc.Arbitrary<{ kind: string; contentType: string; body: Buffer }> = fc.oneof(
    jsonBody.map((body) => ({ kind: 'json', contentType: 'application/json', body: Buffer.from(body, 'latin1') })),
    urlencodedBody.map((body) => ({
      kind: 'urlencoded',
      contentType: 'application/x-www-form-urlencoded',
      body: Buffer.from(body, 'latin1'),
    })),
    multipartRequest.map((request) => ({ kind: 'multipart', ...request })),
    fc
      .tuple(contentType, fc.uint8Array({ maxLength: 500 }))
      .map(([type, bytes]) => ({ kind: 'other-type', contentType: type, body: Buffer.from(bytes) })),
  );
  return fc
    .record({ encoded, apiKey, idempotencyKey })
    .map(({ encoded: request, apiKey: key, idempotencyKey: idem }) => {
      const headers: Record<string, string> = {};
      if (request.contentType !== '') headers['content-type'] = headerBytes(request.contentType);
      if (key !== null) headers['x-api-key'] = headerBytes(key);
      if (idem !== null) headers['idempotency-key'] = headerBytes(idem);
      return { kind: request.kind, headers, body: request.body };
    });
}
