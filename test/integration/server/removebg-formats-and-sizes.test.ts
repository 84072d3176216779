// The HTTP contract of spec/api-spec.md, formats and sizes of POST /v1.0/removebg through the real pipeline
// (test/helpers/http-contract-server.ts: a real port, the real service, real SQLite; the warm-key model, whose
// inference worker runs from dist/): what a client sees of each format and size.

import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../../src/engine/index.js';
import type { Engine } from '../../../src/engine/types.js';
import { warmKeyModel } from '../../helpers/fast-models.js';
import * as http from '../../helpers/http-contract-server.js';

http.useContractServer();

// The real pipeline (decode, sizes, caps, formats, compositing) on the warm-key model, a 1×1 convolution that
// keeps a red disc and removes a light background in milliseconds: what a client sees of each format and size.
// The engine's own rules are in test/integration/engine/pipeline.test.ts; the real model's cut in
// test/e2e/serve-cutouts.test.ts.
describe('formats and sizes through the real pipeline', () => {
  let pipeline: Engine;
  beforeAll(async () => {
    pipeline = await createEngine({ model: warmKeyModel() });
  });
  afterAll(async () => {
    await pipeline?.close();
  });
  // Not the 5 s processing limit of the other tests: a 50 MP encode on a loaded machine takes longer, and no
  // limit is what these tests are about. Longer than a test may run, so the test's own timeout is the bound.
  beforeEach(() => http.start({ engine: pipeline, processingTimeoutMs: 600_000 }));

  /** A flat light background with a red disc: a clean foreground whose box is known. */
  function discImage(width: number, height: number, disc: { cx: number; cy: number; r: number }): Promise<Buffer> {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#dfe8f0"/><circle cx="${disc.cx}" cy="${disc.cy}" r="${disc.r}" fill="#c0392b"/></svg>`;
    return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
  }

  async function pixel(picture: Buffer, x: number, y: number): Promise<number[]> {
    const { data, info } = await sharp(picture).raw().toBuffer({ resolveWithObject: true });
    const at = (y * info.width + x) * info.channels;
    return [...data.subarray(at, at + info.channels)];
  }

  function expectColour(actual: number[], expected: number[], tolerance: number, label: string): void {
    expect(actual.length, label).toBe(expected.length);
    for (const [i, value] of actual.entries())
      expect(
        Math.abs(value - expected[i]!),
        `${label}: ${actual.join(',')} vs ${expected.join(',')}`,
      ).toBeLessThanOrEqual(tolerance);
  }

  /** The result's size, checked against X-Width and X-Height. */
  async function dimensions(
    answer: http.Answer,
  ): Promise<{ width: number; height: number; format: string | undefined }> {
    expect(answer.status, answer.body.toString().slice(0, 300)).toBe(200);
    const meta = await sharp(answer.body).metadata();
    expect([String(meta.width), String(meta.height)]).toEqual([
      answer.headers.get('x-width'),
      answer.headers.get('x-height'),
    ]);
    return { width: meta.width ?? 0, height: meta.height ?? 0, format: meta.format };
  }

  it('format=jpg flattens transparency onto white and keeps the foreground', async () => {
    const disc = await discImage(400, 300, { cx: 200, cy: 150, r: 90 });
    const answer = await http.post(http.form({ format: 'jpg' }, disc));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('image/jpeg');
    const meta = await sharp(answer.body).metadata();
    expect([meta.format, meta.hasAlpha, meta.width, meta.height]).toEqual(['jpeg', false, 400, 300]);
    expectColour(await pixel(answer.body, 2, 2), [255, 255, 255], 6, 'corner');
    expectColour(await pixel(answer.body, 200, 150), [192, 57, 43], 12, 'centre');
  });

  it('format=auto gives JPG when bg_color makes the result opaque, and PNG when bg_color is translucent', async () => {
    const disc = await discImage(400, 300, { cx: 200, cy: 150, r: 90 });
    const opaque = await http.post(http.form({ bg_color: 'red' }, disc));
    expect(opaque.status).toBe(200);
    expect(opaque.headers.get('content-type')).toBe('image/jpeg');
    expect((await sharp(opaque.body).metadata()).format).toBe('jpeg');
    expectColour(await pixel(opaque.body, 2, 2), [255, 0, 0], 8, 'opaque corner');

    const translucent = await http.post(http.form({ bg_color: '#0000ff80' }, disc));
    expect(translucent.status).toBe(200);
    expect(translucent.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(translucent.body).metadata();
    expect([meta.format, meta.hasAlpha]).toEqual(['png', true]);
    expectColour(await pixel(translucent.body, 2, 2), [0, 0, 255, 128], 8, 'translucent corner');
    expect((await pixel(translucent.body, 200, 150))[3]).toBeGreaterThanOrEqual(250);
  });

  it('size=medium caps the result at 1.5 MP with the aspect kept; the foreground box is on the input canvas', async () => {
    const input = await discImage(2000, 1500, { cx: 1000, cy: 750, r: 400 });
    const answer = await http.post(http.form({ size: 'medium' }, input));
    const { width, height } = await dimensions(answer);
    expect(width * height).toBeLessThanOrEqual(1_500_000);
    expect(width * height).toBeGreaterThan(1_480_000);
    expect(Math.abs(width / height - 4 / 3)).toBeLessThan(0.01);
    // The disc spans 600..1400 x 350..1150 on the 2000x1500 input, not on the smaller result.
    const box = ['left', 'top', 'width', 'height'].map((side) => Number(answer.headers.get(`x-foreground-${side}`)));
    for (const [i, value] of box.entries())
      expect(Math.abs(value - [600, 350, 800, 800][i]!), `foreground ${box.join(',')}`).toBeLessThanOrEqual(20);
  });

  it('format=auto at size=50MP is capped at 10 MP even as an opaque JPG; format=jpg at size=auto is not, whatever the balance', async () => {
    const big = await discImage(4000, 3000, { cx: 2000, cy: 1500, r: 900 }); // 12 MP
    const auto = await dimensions(await http.post(http.form({ size: '50MP', bg_color: 'white' }, big)));
    expect(auto.format).toBe('jpeg');
    expect(auto.width * auto.height).toBeLessThanOrEqual(10_000_000);
    expect(auto.width * auto.height).toBeGreaterThan(9_950_000);
    // 9 credits left: size=auto does not size by the balance; the 12 MP input comes back whole.
    const jpg = await dimensions(await http.post(http.form({ size: 'auto', format: 'jpg' }, big)));
    expect([jpg.format, jpg.width, jpg.height]).toEqual(['jpeg', 4000, 3000]);
    expect(await http.balance()).toBe(8);
  });
});
