// What a server gets for a photo its API does not take (engine/decode-input.ts convertForUpload): the same pixels
// as a PNG when that fits 22 MiB, else a high-quality JPEG that does. Real TIFFs made by sharp. And a HEIC's decode,
// seconds of WebAssembly for a phone's photo, leaves the main thread free (a real HEIC made by heif-enc).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../../src/api/limits.js';
import { convertForUpload, decodePhoto } from '../../../src/engine/decode-input.js';
import { heicFromJpeg } from '../../helpers/photo-formats.js';
import { seededRandom } from '../../helpers/seeded-random.js';

describe('convertForUpload', () => {
  it('a photo whose PNG fits 22 MiB goes as that PNG, with the very same pixels', async () => {
    const pixels = Buffer.alloc(120 * 90 * 3, 0);
    for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 7) % 256;
    const tiff = await sharp(pixels, { raw: { width: 120, height: 90, channels: 3 } })
      .tiff({ compression: 'lzw' }) // lossless (sharp's default TIFF compression is JPEG)
      .toBuffer();
    const upload = await convertForUpload(tiff, 'tiff');
    expect(upload.format).toBe('png');
    const sent = await sharp(upload.data).raw().toBuffer({ resolveWithObject: true });
    expect(sent.info).toMatchObject({ format: 'raw', width: 120, height: 90, channels: 3 });
    expect(sent.data.equals(pixels)).toBe(true);
  });

  it('a grainy 12 MP photo whose PNG would pass 22 MiB goes as a JPEG under the limit', async () => {
    const [width, height] = [4000, 3000];
    const random = seededRandom(29);
    const noise = Buffer.alloc(width * height * 3);
    for (let i = 0; i < noise.length; i++) noise[i] = Math.floor(random() * 256);
    // A JPEG-compressed TIFF: under the 22 MiB input limit, still grain that no PNG compresses under it.
    const tiff = await sharp(noise, { raw: { width, height, channels: 3 } })
      .tiff({ compression: 'jpeg', quality: 75 })
      .toBuffer();
    expect(tiff.length).toBeLessThanOrEqual(LIMITS.maxImageBytes);
    const upload = await convertForUpload(tiff, 'tiff');
    expect(upload.format).toBe('jpeg');
    expect(upload.data.length).toBeLessThanOrEqual(LIMITS.maxImageBytes);
    expect(await sharp(upload.data).metadata()).toMatchObject({ format: 'jpeg', width, height });
    // The photo's own PNG really is over the limit, so this test shows the fallback.
    const png = await sharp(tiff).png().toBuffer();
    expect(png.length).toBeGreaterThan(LIMITS.maxImageBytes);
  });
});

describe('decodePhoto of a HEIC', () => {
  it('decodes off the main thread: the event loop keeps turning, so other photos and a progress bar go on', async () => {
    const [width, height] = [1600, 1200];
    const random = seededRandom(26);
    const grain = Buffer.alloc(width * height * 3);
    for (let i = 0; i < grain.length; i++) grain[i] = 64 + Math.floor(random() * 128);
    const work = mkdtempSync(path.join(tmpdir(), 'rmbg-heic-'));
    try {
      const jpeg = await sharp(grain, { raw: { width, height, channels: 3 } })
        .jpeg({ quality: 90 })
        .toBuffer();
      const heic = heicFromJpeg(jpeg, work, 'grain');
      await decodePhoto(heic, 'heic'); // the first decode loads libheif: not what is measured
      // The longest the event loop went without a turn, against the whole decode: on the main thread the
      // WebAssembly decode is one uninterrupted stretch, most of the time taken.
      let longestGap = 0;
      let lastTurn = performance.now();
      let decoding = true;
      const turn = () => {
        const now = performance.now();
        longestGap = Math.max(longestGap, now - lastTurn);
        lastTurn = now;
        if (decoding) setImmediate(turn);
      };
      setImmediate(turn);
      const started = performance.now();
      const photo = await decodePhoto(heic, 'heic');
      const tookMs = performance.now() - started;
      decoding = false;
      expect(photo).toMatchObject({ width, height, channels: 3 });
      expect(longestGap, `longest gap ${longestGap.toFixed(0)} ms of a ${tookMs.toFixed(0)} ms decode`).toBeLessThan(
        tookMs / 2,
      );
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
