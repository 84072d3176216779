// The spec's JSON answer to POST /v1.0/removebg with Accept: application/json, checked field for field: the
// app-level contract test and the real-model test read it the same way.

import { expect } from 'vitest';

const FIELDS = [
  'credits_charged',
  'foreground_height',
  'foreground_left',
  'foreground_top',
  'foreground_width',
  'result_b64',
  'result_height',
  'result_width',
];

/** Asserts a 200 JSON answer holding exactly `{ data: { …the spec's fields } }` and gives its `data`. */
export function jsonResultOf(answer: {
  status: number;
  headers: { get(name: string): string | null };
  body: Buffer;
}): Record<string, number | string> {
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  const json = JSON.parse(answer.body.toString()) as { data: Record<string, number | string> };
  expect(Object.keys(json)).toEqual(['data']);
  expect(Object.keys(json.data).sort()).toEqual([...FIELDS].sort());
  return json.data;
}
