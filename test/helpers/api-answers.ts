// The spec's answers as a client reads them, checked the same way by the app-level contract test and the
// real-model test: the JSON result of POST /v1.0/removebg, and the error body.

import { readFileSync } from 'node:fs';
import { expect } from 'vitest';

/**
 * The JSON result's fields as the spec's table lists them (`| data.result_b64 | …`), read from docs/api-spec.md
 * itself, so that a field added on either side fails the tests that check an answer's shape.
 */
export const SPEC_RESULT_FIELDS: readonly string[] = (() => {
  const spec = readFileSync(new URL('../../docs/api-spec.md', import.meta.url), 'utf8');
  const section = spec.slice(spec.indexOf('### Processing result (JSON form'), spec.indexOf('### Account record'));
  return [...section.matchAll(/^\| data\.(\w+) \|/gm)].map((match) => match[1] as string);
})();

/** An HTTP answer as the tests collect it. */
export interface ApiAnswer {
  status: number;
  headers: { get(name: string): string | null };
  body: Buffer;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Asserts a 200 JSON answer holding exactly `{ data: { …the spec's fields } }` and gives its `data`. */
export function jsonResultOf(answer: ApiAnswer): Record<string, number | string> {
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  const json = JSON.parse(answer.body.toString()) as { data: Record<string, number | string> };
  expect(Object.keys(json)).toEqual(['data']);
  expect(Object.keys(json.data).sort()).toEqual([...SPEC_RESULT_FIELDS].sort());
  return json.data;
}

/** The spec's error body, exactly: {"errors":[{"title","code",…}]} as application/json, plus an X-Request-ID. */
export function expectError(answer: ApiAnswer, status: number, code: string, label = code): void {
  const text = answer.body.toString();
  expect(answer.status, `${label}: ${text}`).toBe(status);
  expect(answer.headers.get('content-type'), label).toMatch(/^application\/json/);
  expect(answer.headers.get('x-request-id'), label).toMatch(UUID);
  const body = JSON.parse(text) as { errors: Array<Record<string, unknown>> };
  expect(Object.keys(body), label).toEqual(['errors']);
  expect(body.errors, label).toHaveLength(1);
  expect(typeof body.errors[0]!.title, label).toBe('string');
  expect(body.errors[0]!.code, label).toBe(code);
}
