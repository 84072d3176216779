// The HTTP contract of spec/api-spec.md, its errors (test/helpers/http-contract-server.ts: a real port, the real
// service, real SQLite): content types, parse and schema errors, authentication, paths and methods, body ceilings,
// malformed requests; and internal text kept in the log, out of the answer.

import { Readable } from 'node:stream';
import { request } from 'undici';
import { beforeEach, describe, expect, it } from 'vitest';
import { expectError, UUID } from '../../helpers/api-answers.js';
import { ERRORS, RmbgError } from '../../../src/api/errors.js';
import { UNSUPPORTED_FIELDS } from '../../../src/api/options.js';
import { MAX_BODY_BYTES } from '../../../src/api/request-limits.js';
import * as http from '../../helpers/http-contract-server.js';

http.useContractServer();

describe('errors', () => {
  beforeEach(() => http.start());

  it('answers other content types with 415 and the error body, before looking at the key, and keeps serving', async () => {
    for (const contentType of ['text/plain', 'application/octet-stream', 'image/jpeg']) {
      const response = await http.post('hello', { 'Content-Type': contentType });
      expectError(response, 415, 'unsupported_content_type', contentType);
      expect(http.errorOf(response.body).title).toBe(ERRORS.unsupported_content_type.title);
    }
    // fetch labels a string body text/plain; a Blob without a type goes out with no Content-Type at all.
    const untyped = await http.post(new Blob([new Uint8Array(http.image)]));
    expectError(untyped, 415, 'unsupported_content_type', 'no Content-Type');
    expect(http.errorOf(untyped.body).detail).toContain('no Content-Type');
    const missing = await request(`${http.server.url}/v1.0/removebg`, {
      method: 'POST',
      body: 'hello',
      headers: { 'x-api-key': http.key },
    });
    expect(missing.statusCode).toBe(415);
    expect(http.errorOf(Buffer.from(await missing.body.arrayBuffer())).code).toBe('unsupported_content_type');
    const noKey = await http.call('/v1.0/removebg', {
      method: 'POST',
      body: 'x',
      headers: { 'Content-Type': 'text/plain' },
    });
    expectError(noKey, 415, 'unsupported_content_type', 'no key');
    expect(await http.balance()).toBe(10);
    expect((await http.post(http.form())).status).toBe(200);
  });

  it('answers malformed JSON with 400 invalid_request, not a framework error', async () => {
    const response = await http.post('{"image_url": ', { 'Content-Type': 'application/json' });
    expectError(response, 400, 'invalid_request');
  });

  it('answers parsing and schema errors with 400 and their codes, in every encoding, charging nothing', async () => {
    const b64 = http.image.toString('base64');
    const json = { 'Content-Type': 'application/json' };
    const urlencoded = { 'Content-Type': 'application/x-www-form-urlencoded' };
    const duplicated = http.form({ size: 'hd' });
    duplicated.append('size', 'small');
    const cases: Array<[Promise<http.Answer>, string, string]> = [
      [http.post(http.form({}, null)), 'missing_image_source', 'no source'],
      [
        http.post(http.form({ image_url: 'https://example.com/a.png' })),
        'multiple_image_sources',
        'multipart file + url',
      ],
      [http.post(http.form({ image_file_b64: b64 })), 'multiple_image_sources', 'multipart file + b64'],
      [
        http.post(JSON.stringify({ image_url: 'https://example.com/a.jpg', image_file_b64: b64 }), json),
        'multiple_image_sources',
        'JSON url + b64',
      ],
      [
        http.post(
          new URLSearchParams({ image_url: 'https://example.com/a.jpg', image_file_b64: b64 }).toString(),
          urlencoded,
        ),
        'multiple_image_sources',
        'urlencoded url + b64',
      ],
      [http.post(http.form({ colour: 'red' })), 'unknown_field', 'colour'],
      [http.post(http.form({ resolution: 'hd' })), 'unknown_field', 'resolution'],
      [http.post(http.form({ size: 'huge' })), 'invalid_option', 'size huge'],
      [http.post(duplicated), 'invalid_request', 'a field twice'],
      [http.post(JSON.stringify({ image_file: b64 }), json), 'invalid_request', 'JSON image_file'],
      [
        http.post(new URLSearchParams({ image_file: b64 }).toString(), urlencoded),
        'invalid_request',
        'urlencoded image_file',
      ],
      [
        http.post(JSON.stringify({ image_file_b64: `data:image/jpeg;base64,${b64}` }), json),
        'invalid_base64',
        'JSON data:',
      ],
      [
        http.post(http.form({ image_file_b64: `data:image/jpeg;base64,${b64}` }, null)),
        'invalid_base64',
        'multipart data:',
      ],
      [
        http.post(new URLSearchParams({ image_file_b64: `data:image/jpeg;base64,${b64}` }).toString(), urlencoded),
        'invalid_base64',
        'urlencoded data:',
      ],
      [http.post('image_url=http%3A%2F%2Fexample.com%2Fx.jpg', urlencoded), 'invalid_image_url', 'http image_url'],
      // The schema is closed: options in the query string are refused, not silently ignored.
      [
        http.call('/v1.0/removebg?size=full', {
          method: 'POST',
          body: http.form(),
          headers: { 'X-API-Key': http.key },
        }),
        'invalid_request',
        'query size',
      ],
      [
        http.call('/v1.0/removebg?shadow=1', { method: 'POST', body: http.form(), headers: { 'X-API-Key': http.key } }),
        'invalid_request',
        'query shadow',
      ],
    ];
    for (const [pending, code, label] of cases) expectError(await pending, 400, code, label);
    expect(http.engine.calls).toBe(0);
    expect(await http.balance()).toBe(10);
  });

  it("refuses the CLI's local formats (psd, tiff) as any unknown format, charging nothing", async () => {
    for (const format of ['psd', 'tiff']) {
      const answer = await http.post(http.form({ format }));
      expectError(answer, 400, 'invalid_option', format);
      expect(http.errorOf(answer.body).detail).toBe(`format must be one of auto, png, jpg, webp; got '${format}'`);
    }
    expect(http.engine.calls).toBe(0);
    expect(await http.balance()).toBe(10);
  });

  it('refuses every unsupported parameter with 400 unsupported_parameter naming it, charging nothing', async () => {
    const cases: Array<[string, string]> = [
      ...UNSUPPORTED_FIELDS.map((name): [string, string] => [name, '1']),
      ['type', 'person'],
      ['type_level', '2'],
      ['channels', 'alpha'],
    ];
    for (const [name, value] of cases) {
      const answer = await http.post(http.form({ [name]: value }));
      expectError(answer, 400, 'unsupported_parameter', name);
      expect(http.errorOf(answer.body).detail, name).toContain(name);
    }
    // Empty values of unsupported parameters mean "not set": this body fails for its missing source instead.
    expectError(await http.post(http.form({ shadow: '', roi: '' }, null)), 400, 'missing_image_source', 'empty values');
    expect(await http.balance()).toBe(10);
  });

  it('answers authentication failures with 403 and no rate-limit headers before the key is known', async () => {
    const missing = await http.call('/v1.0/removebg', { method: 'POST', body: http.form() });
    expectError(missing, 403, 'missing_api_key');
    expect(missing.headers.get('x-ratelimit-limit')).toBeNull();
    const wrong = await http.post(http.form(), { 'X-API-Key': 'rmbg_not_a_key' });
    expectError(wrong, 403, 'invalid_api_key');
    const account = await http.call('/v1.0/account');
    expectError(account, 403, 'missing_api_key', 'account without key');
    expect(account.headers.get('x-ratelimit-limit')).toBeNull();
    expectError(
      await http.call('/v1.0/account', { headers: { 'X-API-Key': 'rmbg_not-a-key' } }),
      403,
      'invalid_api_key',
      'account, unknown key',
    );
    // OAuth is not supported: a valid key as a bearer token is no key at all.
    expectError(
      await http.call('/v1.0/account', { headers: { Authorization: `Bearer ${http.key}` } }),
      403,
      'missing_api_key',
      'bearer',
    );
    const free = (await http.store.createAccountWithKey({ plan: 'free', credits: 5 })).key;
    expectError(await http.post(http.form(), { 'X-API-Key': free }), 403, 'plan_without_api_access', 'free plan');
    const revoked = await http.store.createAccountWithKey({ plan: 'pro', credits: 5 });
    expect((await http.call('/v1.0/account', { headers: { 'X-API-Key': revoked.key } })).status).toBe(200);
    await http.store.revokeKey(revoked.id);
    expectError(await http.post(http.form(), { 'X-API-Key': revoked.key }), 403, 'invalid_api_key', 'revoked');
    expect(http.engine.calls).toBe(0);
  });

  it('answers paths outside /v1.0 with 404 and wrong methods with 405 and Allow, charging nothing', async () => {
    const withKey = { 'X-API-Key': http.key };
    for (const path of [
      '/v1.0/nothing',
      '/removebg',
      '/account',
      '/v1/removebg',
      '/v2.0/account',
      '/V1.0/account',
      '/v1.0/account/',
      '/v1.0/removebg/extra',
      '/v1.0',
    ])
      expectError(await http.call(path, { headers: withKey }), 404, 'not_found', `GET ${path}`);
    const getRemove = await http.call('/v1.0/removebg', { headers: withKey });
    expectError(getRemove, 405, 'method_not_allowed', 'GET /v1.0/removebg');
    expect(getRemove.headers.get('allow')).toBe('POST');
    const putRemove = await http.call('/v1.0/removebg', { method: 'PUT', headers: withKey });
    expectError(putRemove, 405, 'method_not_allowed', 'PUT /v1.0/removebg');
    const deleteAccount = await http.call('/v1.0/account', { method: 'DELETE', headers: withKey });
    expectError(deleteAccount, 405, 'method_not_allowed', 'DELETE /v1.0/account');
    expect(deleteAccount.headers.get('allow')).toBe('GET, HEAD');
    const postAccount = await http.call('/v1.0/account', {
      method: 'POST',
      body: '{}',
      headers: { ...withKey, 'Content-Type': 'application/json' },
    });
    expectError(postAccount, 405, 'method_not_allowed', 'POST /v1.0/account');
    expect(postAccount.headers.get('allow')).toBe('GET, HEAD');
    // No CORS preflight is offered: OPTIONS is a method like any other the endpoint does not take.
    const options = await http.call('/v1.0/removebg', { method: 'OPTIONS' });
    expectError(options, 405, 'method_not_allowed', 'OPTIONS /v1.0/removebg');
    expect(options.headers.get('allow')).toBe('POST');

    // An upload to a wrong place still gets its answer: the server reads the body away instead of
    // resetting the connection under a client that is still sending (which fetch reports as EPIPE).
    const upload = Buffer.alloc(2 * 1024 * 1024, 0x5a);
    const to = (path: string, body: NonNullable<RequestInit['body']>, headers: Record<string, string> = {}) =>
      http.call(path, { method: 'POST', body, headers: { ...withKey, ...headers } });
    expectError(await to('/removebg', http.form({}, upload)), 404, 'not_found', 'POST /removebg');
    expectError(
      await to('/v1.0/account', http.form({}, upload)),
      405,
      'method_not_allowed',
      'POST /v1.0/account, a file',
    );
    expectError(
      await to('/v1.0/removebg', new Uint8Array(upload), { 'Content-Type': 'image/jpeg' }),
      415,
      'unsupported_content_type',
      'raw JPEG',
    );
    expectError(
      await to('/v1.0/removebg?size=full', http.form({}, upload)),
      400,
      'invalid_request',
      'query with a file',
    );
    expect(http.engine.calls).toBe(0);
    expect(await http.balance()).toBe(10);
  });

  it('answers HEAD /v1.0/account like GET without a body, and HEAD /v1.0/removebg with 405', async () => {
    const get = await http.call('/v1.0/account', { headers: { 'X-API-Key': http.key } });
    const head = await http.call('/v1.0/account', { method: 'HEAD', headers: { 'X-API-Key': http.key } });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    expect(head.headers.get('content-length')).toBe(String(get.body.length));
    expect(head.headers.get('x-request-id')).toMatch(UUID);
    expect(head.headers.get('x-ratelimit-limit')).toBe('60');
    const headRemove = await http.call('/v1.0/removebg', { method: 'HEAD', headers: { 'X-API-Key': http.key } });
    expect(headRemove.status).toBe(405);
    expect(headRemove.headers.get('allow')).toBe('POST');
    expect(headRemove.headers.get('x-request-id')).toMatch(UUID);
  });

  it('refuses a declared Content-Length over the limit with 400 file_too_large, and the client receives it', async () => {
    const big = Buffer.alloc(MAX_BODY_BYTES.json + 1024, 0x41);
    const response = await request(`${http.server.url}/v1.0/removebg`, {
      method: 'POST',
      body: big,
      headers: { 'content-type': 'application/json', 'x-api-key': http.key },
    });
    expect(response.statusCode).toBe(400);
    expect(http.errorOf(Buffer.from(await response.body.arrayBuffer())).code).toBe('file_too_large');
    expect((await http.post(http.form())).status).toBe(200);
  });

  it('refuses a 23 MiB image_file in a multipart body (under the body ceiling) with 400 file_too_large, and keeps serving', async () => {
    const answer = await http.post(http.form({}, Buffer.alloc(23 * 1024 * 1024, 0xff)));
    expectError(answer, 400, 'file_too_large');
    expect(http.engine.calls).toBe(0);
    expect(await http.balance()).toBe(10);
    expect((await http.post(http.form())).status).toBe(200);
  });

  it('stops reading a chunked body (no Content-Length) past the limit with 400 file_too_large', async () => {
    let sent = 0;
    async function* body() {
      yield Buffer.from('{"image_file_b64":"');
      for (; sent < 64 * 1024 * 1024; sent += 1024 * 1024) yield Buffer.alloc(1024 * 1024, 0x41);
      yield Buffer.from('"}');
    }
    const response = await request(`${http.server.url}/v1.0/removebg`, {
      method: 'POST',
      body: Readable.from(body()),
      headers: { 'content-type': 'application/json', 'x-api-key': http.key },
    });
    expect(response.statusCode).toBe(400);
    expect(http.errorOf(Buffer.from(await response.body.arrayBuffer())).code).toBe('file_too_large');
    expect(sent).toBeLessThan(64 * 1024 * 1024);
    expect((await http.post(http.form())).status).toBe(200);
  });

  it('answers a malformed HTTP request with 400 and the error body', async () => {
    const answer = await http.rawExchange('BLAH /v1.0/removebg HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(answer).toMatch(/X-Request-ID: [0-9a-f-]{36}/i);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
      errors: [{ code: 'invalid_request' }],
    });
    expect((await http.post(http.form())).status).toBe(200);
  });
});

describe('internal text stays in the log', () => {
  const cases: Array<[string, unknown, number, string]> = [
    [
      'onnxruntime text',
      new Error(
        "onnxruntime: Non-zero status code returned while running Conv node. Name:'/stage1/conv' /opt/rmbg/models/isnet.onnx",
      ),
      502,
      'processing_failed',
    ],
    [
      'libvips text',
      new RmbgError(
        'corrupt_image',
        'the image could not be decoded (truncated or corrupt): VipsJpeg: Premature end of input file /tmp/rmbg-upload-1',
      ),
      400,
      'corrupt_image',
    ],
    [
      'a file path of io_error',
      new RmbgError('io_error', "EACCES: permission denied, open '/var/lib/rmbg/secret/rmbg.sqlite'"),
      500,
      'internal_error',
    ],
  ];
  for (const [label, error, status, code] of cases) {
    it(`answers ${label} with the table's stable detail; the log has the text and the request id`, async () => {
      await http.start({ behaviour: { kind: 'fail', error }, log: true });
      const failed = await http.post(http.form());
      const body = http.errorOf(failed.body);
      expect([failed.status, body.code]).toEqual([status, code]);
      expect(body.detail).toBe(ERRORS[code as keyof typeof ERRORS].detail);
      expect(failed.body.toString()).not.toMatch(/\/opt|\/tmp|\/var|onnxruntime|Vips/);
      const requestId = failed.headers.get('x-request-id') as string;
      const line = http.logged.find((entry) => entry.includes(requestId));
      expect(line).toBeDefined();
      expect(line).toContain((error as Error).message.slice(0, 40).replace(/'/g, "'"));
      expect(await http.balance()).toBe(10);
    });
  }
});
