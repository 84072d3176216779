// The library's options: values checked by the API's one schema (its messages), names in the library's own
// words. A misspelt option or an API field name must be refused, not silently ignored.

import { describe, expect, it } from 'vitest';
import { CALLER_DEFAULT_OPTIONS, parseRemoveOptions } from '../../../src/api/options.js';
import { RmbgError } from '../../../src/api/errors.js';
import { parseImageOptions } from '../../../src/library/remove-options.js';
import { BATCH_SETTINGS, CALL_TABLE } from '../../../src/settings/index.js';
import { joinTables } from '../../../src/settings/setting.js';

function failure(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof RmbgError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a rejection');
}

const ALLOWED =
  'allowed options: size, format, crop, bgColor, apiUrl, apiKey, timeoutMs, keepMetadata, keepGps, mask, raw, model, device, threads, spinWait, graphCache, cleanEdges, signal';

describe('parseImageOptions', () => {
  it('reads the camelCase options into the engine options, the CLI defaults for the rest', () => {
    expect(
      parseImageOptions({
        size: 'hd',
        crop: true,
        bgColor: 'fff',
        model: 'isnet-medium',
        signal: new AbortController().signal,
      }),
    ).toEqual({
      ...CALLER_DEFAULT_OPTIONS,
      size: 'hd',
      crop: true,
      bgColor: { r: 255, g: 255, b: 255, alpha: 1 },
    });
  });

  it("refuses a bad value with the API schema's own message", () => {
    const schema = failure(() => parseRemoveOptions({ bg_color: 'nope' }));
    expect(failure(() => parseImageOptions({ bgColor: 'nope' }))).toEqual({
      code: 'invalid_option',
      message: schema.message,
    });
    expect(schema.message).toContain("got 'nope'");
  });

  it('refuses a misspelt option and an API field name, naming the options there are', () => {
    expect(failure(() => parseImageOptions({ sise: 'hd' }))).toEqual({
      code: 'unknown_field',
      message: `unknown option 'sise'; ${ALLOWED}`,
    });
    // The API's spelling of an option, and its image source fields, are not options of the library.
    expect(failure(() => parseImageOptions({ bg_color: 'red' }))).toEqual({
      code: 'unknown_field',
      message: `unknown option 'bg_color'; ${ALLOWED}`,
    });
    expect(failure(() => parseImageOptions({ image_url: 'https://example.com/cat.jpg' })).message).toMatch(
      /^unknown option 'image_url'/,
    );
    // The batch's options belong to removeBackgrounds() only.
    expect(failure(() => parseImageOptions({ outDir: 'out' })).message).toMatch(/^unknown option 'outDir'/);
    const batch = joinTables(BATCH_SETTINGS, CALL_TABLE);
    expect(parseImageOptions({ outDir: 'out', watch: true }, batch)).toEqual(CALLER_DEFAULT_OPTIONS);
    expect(failure(() => parseImageOptions({ outdir: 'out' }, batch)).message).toBe(
      `unknown option 'outdir'; ${ALLOWED.replace('bgColor, ', 'bgColor, outDir, recursive, watch, maskOnly, rawPairs, overwrite, concurrency, runTimeoutMs, retryFailed, reviewBelow, reviewPage, retryReview, ')}`,
    );
  });
});
