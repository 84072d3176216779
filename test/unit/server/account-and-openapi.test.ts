// The HTTP contract of spec/api-spec.md, GET /v1.0/account and /v1.0/openapi.json
// (test/helpers/http-contract-server.ts: a real port, the real service, real SQLite): the account record, and an
// OpenAPI document that declares what the server sends.

import { beforeEach, describe, expect, it } from 'vitest';
import { SPEC_RESULT_FIELDS, UUID } from '../../helpers/api-answers.js';
import { HEADERS } from '../../../src/api/response-headers.js';
import { OPTION_FIELDS, SOURCE_FIELDS, UNSUPPORTED_FIELDS } from '../../../src/api/options.js';
import * as http from '../../helpers/http-contract-server.js';

http.useContractServer();

describe('the OpenAPI document declares what the server sends', () => {
  type Doc = {
    paths: Record<
      string,
      Record<string, { responses: Record<string, { $ref?: string; headers?: Record<string, unknown> }> }>
    >;
    components: { responses: Record<string, { headers?: Record<string, unknown> }> };
  };

  function declaredHeaders(doc: Doc, status: number): string[] {
    const response = doc.paths['/v1.0/removebg']!.post!.responses[String(status)];
    expect(response, `POST /v1.0/removebg declares ${status}`).toBeDefined();
    const resolved = response!.$ref ? doc.components.responses[response!.$ref.split('/').pop() as string] : response;
    return Object.keys(resolved?.headers ?? {}).map((name) => name.toLowerCase());
  }

  it('every API header of a 200 is declared, the X-Confidence extension included; the JSON result is closed', async () => {
    await http.start();
    const answer = await http.post(http.form());
    expect(answer.status).toBe(200);
    type Closed = { additionalProperties: boolean; required: string[]; properties: Record<string, unknown> };
    const doc = (await (await fetch(`${http.server.url}/v1.0/openapi.json`)).json()) as Doc & {
      components: {
        headers: Record<string, { description: string }>;
        schemas: Record<string, Closed & { description: string; properties: { data: Closed } }>;
      };
    };
    const apiHeaders = new Set(Object.values(HEADERS).map((name) => name.toLowerCase()));
    const sent = [...answer.headers.keys()].filter((name) => apiHeaders.has(name));
    expect(sent).toContain('x-confidence');
    expect(declaredHeaders(doc, 200)).toEqual(expect.arrayContaining(sent));
    expect(doc.components.headers['X-Confidence']?.description).toMatch(/^Extension \(not in the API spec\)/);
    // The JSON result: the spec's fields and nothing else; it points to the header for the confidence.
    const result = doc.components.schemas.RemoveResult!;
    expect(result.additionalProperties).toBe(false);
    expect(result.properties.data.additionalProperties).toBe(false);
    expect(Object.keys(result.properties.data.properties).sort()).toEqual([...SPEC_RESULT_FIELDS].sort());
    expect(result.properties.data.required.sort()).toEqual([...SPEC_RESULT_FIELDS].sort());
    expect(result.description).toContain('X-Confidence header');
  });

  it('every API header of a 409 in progress, a 503 busy and a 429 is declared for its status (Retry-After included)', async () => {
    await http.start({ rateLimit: 3, maxQueue: 0, behaviour: { kind: 'gated' } });
    const running = http.post(http.form(), { 'Idempotency-Key': 'k1' });
    await http.engine.started(1);
    const answers = [
      await http.post(http.form(), { 'Idempotency-Key': 'k1' }),
      await http.post(http.form()),
      await http.post(http.form()),
    ];
    expect(answers.map((answer) => [answer.status, http.errorOf(answer.body).code])).toEqual([
      [409, 'idempotency_in_progress'],
      [503, 'service_busy'],
      [429, 'rate_limited'],
    ]);
    const doc = (await (await fetch(`${http.server.url}/v1.0/openapi.json`)).json()) as Doc;
    const apiHeaders = new Set(Object.values(HEADERS).map((name) => name.toLowerCase()));
    for (const answer of answers) {
      const sent = [...answer.headers.keys()].filter((name) => apiHeaders.has(name));
      expect(sent).toContain('retry-after');
      expect(declaredHeaders(doc, answer.status), `headers of ${answer.status}`).toEqual(expect.arrayContaining(sent));
    }
    http.engine.release();
    expect((await running).status).toBe(200);
  });
});

describe('GET /v1.0/account and /v1.0/openapi.json', () => {
  beforeEach(() => http.start());

  it('answers the account record: integers, total = subscription + payg, enterprise and free_calls 0, all sizes', async () => {
    await http.store.addCredits({ apiKey: http.key }, 3, 'subscription');
    const answer = await http.call('/v1.0/account', { headers: { 'X-API-Key': http.key } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.headers.get('x-request-id')).toMatch(UUID);
    expect(answer.headers.get('x-ratelimit-limit')).toBe('60');
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
      expect(answer.headers.get(name), name).toMatch(/^\d+$/);
    // The exact text: integers (13, not 13.0 or "13"), and no member beyond the spec's.
    expect(JSON.parse(answer.body.toString())).toStrictEqual({
      data: {
        attributes: {
          credits: { total: 13, subscription: 3, payg: 10, enterprise: 0 },
          api: { free_calls: 0, sizes: 'all' },
        },
      },
    });
    expect(answer.body.toString()).toContain('"total":13,"subscription":3,"payg":10,"enterprise":0');
  });

  it('serves an OpenAPI 3.1 document with every field, unsupported parameter and wire error code', async () => {
    const response = await fetch(`${http.server.url}/v1.0/openapi.json`);
    expect(response.status).toBe(200);
    const doc = (await response.json()) as {
      openapi: string;
      info: { version: string };
      paths: Record<string, unknown>;
      components: {
        schemas: Record<string, { properties: Record<string, unknown> }>;
        responses: Record<string, unknown>;
      };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1.0/removebg', '/v1.0/account']));
    const multipart = Object.keys(doc.components.schemas.RemoveRequest_multipart!.properties);
    const json = Object.keys(doc.components.schemas.RemoveRequest_json!.properties);
    for (const name of [...SOURCE_FIELDS, ...OPTION_FIELDS.map((f) => f.name), ...UNSUPPORTED_FIELDS])
      expect(multipart).toContain(name);
    expect(json).not.toContain('image_file');
    const text = JSON.stringify(doc);
    for (const code of [
      'insufficient_credits',
      'request_timeout',
      'idempotency_key_failed',
      'unsupported_content_type',
      'processing_timeout',
    ])
      expect(text).toContain(code);
    expect(text).not.toContain('usage_error');
    for (const status of [400, 402, 403, 408, 409, 415, 429, 502, 503, 504])
      expect(Object.keys(doc.components.responses)).toContain(`Error${status}`);
  });
});
