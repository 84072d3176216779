import { describe, expect, it } from 'vitest';
import { DEFAULT_OPTIONS, validateIdempotencyKey } from '../../../src/api/options.js';
import { idempotencyKeyFor } from '../../../src/client/idempotency-key.js';

const image = Buffer.from('some image bytes');

describe('idempotencyKeyFor', () => {
  it('is stable for the same image and options, and a valid header value', () => {
    const key = idempotencyKeyFor(image, DEFAULT_OPTIONS);
    expect(key).toBe(idempotencyKeyFor(Buffer.from('some image bytes'), { ...DEFAULT_OPTIONS }));
    expect(key).toMatch(/^rmbg-[0-9a-f]{64}$/);
    expect(key.length).toBeLessThanOrEqual(128);
    expect(validateIdempotencyKey(key)).toBe(key);
  });

  it('changes with the image bytes, any option that changes the output, and the salt', () => {
    const base = idempotencyKeyFor(image, DEFAULT_OPTIONS);
    const others = [
      idempotencyKeyFor(Buffer.from('some image bytez'), DEFAULT_OPTIONS),
      idempotencyKeyFor(image, { ...DEFAULT_OPTIONS, size: 'hd' }),
      idempotencyKeyFor(image, { ...DEFAULT_OPTIONS, format: 'png' }),
      idempotencyKeyFor(image, { ...DEFAULT_OPTIONS, crop: true }),
      idempotencyKeyFor(image, { ...DEFAULT_OPTIONS, bgColor: { r: 255, g: 255, b: 255, alpha: 1 } }),
      idempotencyKeyFor(image, DEFAULT_OPTIONS, 'retry-1'),
    ];
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
  });
});
