// The output formats come from one table: the `format` option's values, the OpenAPI document's 200 answers, the
// media type a client maps back to a format, and the pixel cap (PNG's, and auto's since it may choose PNG).

import { expect, it } from 'vitest';
import { formatMaxPixels, formatOfMime, OUTPUT_FORMATS } from '../../../src/api/media-types.js';
import { openApiDocument } from '../../../src/api/openapi.js';
import { LIMITS } from '../../../src/api/limits.js';
import { FORMATS, OPTION_FIELDS } from '../../../src/api/options.js';

it('lists every output format as a `format` value and as a 200 answer of the OpenAPI document, each media type mapping back', () => {
  expect(FORMATS).toEqual(['auto', 'png', 'jpg', 'webp']);
  expect(OPTION_FIELDS.find((field) => field.name === 'format')).toMatchObject({ values: FORMATS });
  const doc = openApiDocument() as {
    paths: Record<string, { post: { responses: Record<string, { content: Record<string, unknown> }> } }>;
  };
  const answers = Object.keys(doc.paths['/v1.0/removebg']!.post.responses['200']!.content);
  expect(answers).toEqual(['image/png', 'image/jpeg', 'image/webp', 'application/json']);
  for (const [format, row] of Object.entries(OUTPUT_FORMATS)) expect(formatOfMime(row.mimeType)).toBe(format);
  expect(formatOfMime('image/gif')).toBeUndefined();
});

it('caps PNG and auto at 10 MP whatever the size, and JPG and WebP not at all', () => {
  expect(formatMaxPixels('png')).toBe(LIMITS.pngMaxPixels);
  expect(formatMaxPixels('auto')).toBe(LIMITS.pngMaxPixels);
  expect(formatMaxPixels('jpg')).toBe(Number.POSITIVE_INFINITY);
  expect(formatMaxPixels('webp')).toBe(Number.POSITIVE_INFINITY);
});
