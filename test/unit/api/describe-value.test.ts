// Client values quoted in error messages: bounded, flat, printable, whatever the client sent.

import { describe, expect, it } from 'vitest';
import { describeValue } from '../../../src/api/describe-value.js';

describe('describeValue', () => {
  it('quotes strings, cut at 60 characters, with control characters escaped', () => {
    expect(describeValue('huge')).toBe("'huge'");
    expect(describeValue('x'.repeat(5000))).toBe(`'${'x'.repeat(60)}…'`);
    expect(describeValue('a\u0000b\nc')).toBe("'a\\u0000b\\nc'");
  });

  it('names arrays and objects instead of printing them, however deep', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    expect(describeValue(deep)).toBe('an object');
    expect(describeValue([1, [2, [3]]])).toBe('an array of 2 items');
    expect([describeValue(null), describeValue(true), describeValue(1e308)]).toEqual(['null', 'true', '1e+308']);
  });
});
