// The spec's answers as a client reads them, checked the same way by the app-level contract test and the
// real-model test: the JSON result of POST /v1.0/removebg, and the error body.

import { expect } from 'vitest';

// The spec's fields and rmbg's extension, the cutout's confidence (docs/api.md).
const FIELDS = [
  'confidence',
  'credits_charged',
  'foreground_height',
  'foreground_left',
  'foreground_top',
  'foreground_width',
  'result_b64',
  'result_height',
  'result_width',
];

/** An HTTP answer as the tests collect it. */
export interface ApiAnswer {
  status: number;
  headers: { get(name: string): string | null };
  body: Buffer;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Asserts a 200 JSON answer holding exactly `{ data: { …the spec's fields, confidence } }` and gives its `data`. */
export function jsonResultOf(answer: ApiAnswer): Record<string, number | string> {
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  const json = JSON.parse(answer.body.toString()) as { data: Record<string, number | string> };
  expect(Object.keys(json)).toEqual(['data']);
  expect(Object.keys(json.data).sort()).toEqual([...FIELDS].sort());
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
