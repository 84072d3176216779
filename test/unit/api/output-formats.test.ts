// The output formats come from one table: the `format` option's values, the OpenAPI document's 200 answers and
// format field (the web page's choices), the media type a client maps back to a format, the pixel cap (PNG's, and
// auto's since it may choose PNG), a result file's extension and its encoder. Each row must give every reader
// what it needs.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  API_FORMAT_NAMES,
  AUTO_FORMAT,
  formatMaxPixels,
  formatOfMime,
  MIME_OF_INPUT,
  OUTPUT_FORMATS,
  type OutputFormat,
  type OutputFormatRow,
  supportedFormatOf,
} from '../../../src/api/media-types.js';
import { openApiDocument } from '../../../src/api/openapi.js';
import { LIMITS } from '../../../src/api/limits.js';
import { CALLER_DEFAULT_OPTIONS, FORMATS, OPTION_FIELDS, parseRemoveOptions } from '../../../src/api/options.js';
import { possibleExtensions } from '../../../src/batch/output-paths.js';
import { finishCutout } from '../../../src/engine/output/pixel-operations.js';

const WEB = path.join(import.meta.dirname, '..', '..', '..', 'web');

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

it('keeps psd and tiff from the HTTP API, which refuses them as before, while rmbg’s own callers take them', () => {
  expect(API_FORMAT_NAMES).toEqual(['png', 'jpg', 'webp']);
  for (const format of ['psd', 'tiff']) {
    expect(() => parseRemoveOptions({ format })).toThrow(
      expect.objectContaining({
        code: 'invalid_option',
        message: `format must be one of auto, png, jpg, webp; got '${format}'`,
      }),
    );
    expect(parseRemoveOptions({ format }, CALLER_DEFAULT_OPTIONS, 'local').format).toBe(format);
  }
});

describe('each row of the output formats', () => {
  const all = Object.entries(OUTPUT_FORMATS) as [OutputFormat, OutputFormatRow][];
  // The layered formats' files are read back by real programs in test/e2e/remove-mask-and-layers.test.ts.
  const rows = all.filter(([, row]) => !row.localOnly);

  it('has a title, a media type and a file extension of its own', () => {
    for (const [format, row] of all) {
      expect(row.title, format).toMatch(/\S/);
      expect(row.mimeType, format).toMatch(/^image\/[a-z0-9.+-]+$/);
      expect(row.extension, format).toMatch(/^\.[a-z0-9]+$/);
    }
    expect(new Set(all.map(([, row]) => row.extension)).size).toBe(all.length);
    expect(new Set(all.map(([, row]) => row.mimeType)).size).toBe(all.length);
    // The batch names its files from the table: auto may write either of its choices' extensions.
    expect(possibleExtensions('auto')).toEqual([OUTPUT_FORMATS.png.extension, OUTPUT_FORMATS.jpg.extension]);
  });

  it('has an encoder whose file is of its media type, keeping alpha exactly where the row says', async () => {
    const [width, height] = [4, 2];
    const pixels = new Uint8Array(width * height * 4).fill(200);
    const mask = new Uint8Array(width * height).fill(255).fill(0, 0, 4); // the top row is background
    for (const [format, { encoder, mimeType, keepsAlpha }] of rows) {
      const finished = await finishCutout({
        pixels,
        channels: 4,
        width,
        height,
        mask: { data: mask, width, height },
        findBounds: false,
        format,
        background: undefined,
      });
      const file =
        'png' in finished
          ? Buffer.from(finished.png)
          : encoder.by === 'sharp'
            ? await sharp(finished.composed, { raw: { width, height, channels: finished.channels } })
                [encoder.method](encoder.options)
                .toBuffer()
            : undefined;
      expect(file, `${format}: its encoder made nothing`).toBeInstanceOf(Buffer);
      const kind = supportedFormatOf(file as Buffer);
      expect(kind && MIME_OF_INPUT[kind], format).toBe(mimeType);
      expect((await sharp(file).metadata()).hasAlpha, format).toBe(keepsAlpha);
    }
  });

  it("reaches a client through the OpenAPI document's format field, which the web page builds its choices from", () => {
    const doc = openApiDocument() as {
      components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> };
    };
    for (const encoding of ['multipart', 'json', 'urlencoded']) {
      const field = doc.components.schemas[`RemoveRequest_${encoding}`]!.properties.format!;
      expect(field.enum).toEqual(FORMATS);
      const described = field['x-output-formats'] as Record<string, Record<string, unknown>>;
      expect(Object.keys(described)).toEqual(API_FORMAT_NAMES);
      for (const [format, row] of rows) {
        expect(described[format], format).toEqual({
          title: row.title,
          mediaType: row.mimeType,
          extension: row.extension,
          keepsAlpha: row.keepsAlpha,
        });
      }
      expect(field['x-auto-format']).toEqual(AUTO_FORMAT);
    }
    // The page names no output format of its own (index.html's file picker names the input formats): a new row
    // shows there without touching it.
    const [html, script] = ['index.html', 'app.js'].map((file) => readFileSync(path.join(WEB, file), 'utf8'));
    for (const [format, row] of rows) {
      expect(script, format).not.toContain(row.mimeType);
      expect(`${html}${script}`, format).not.toContain(`value="${format}"`);
    }
  });
});
