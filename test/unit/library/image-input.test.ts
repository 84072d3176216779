// What removeBackground() accepts as an image, read into the bytes the engine gets (no model needed).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readImageInput, type ImageInput } from '../../../src/library/image-input.js';
import { ROOT } from '../../helpers/cli.js';
import { rejectionOf } from '../../helpers/rejection.js';

const PHOTO = path.join(ROOT, 'samples/chelsea.png');

describe('readImageInput', () => {
  it('reads the same bytes from a Buffer, a Uint8Array view, an ArrayBuffer, a Blob, a path and a file: URL', async () => {
    const bytes = readFileSync(PHOTO);
    // A view into a larger buffer: only its own bytes count.
    const padded = new Uint8Array(bytes.length + 8);
    padded.set(bytes, 4);
    const inputs: ImageInput[] = [
      bytes,
      padded.subarray(4, 4 + bytes.length),
      new Uint8Array(bytes).buffer,
      new Blob([new Uint8Array(bytes)]),
      PHOTO,
      pathToFileURL(PHOTO),
    ];
    for (const input of inputs) expect((await readImageInput(input, undefined)).equals(bytes)).toBe(true);
  });

  it('a file that cannot be read is io_error naming it; anything else is refused saying what is accepted', async () => {
    const missing = path.join(ROOT, 'samples/missing.png');
    const unreadable = await rejectionOf(readImageInput(missing, undefined));
    expect(unreadable.code).toBe('io_error');
    expect(unreadable.message).toContain(`cannot read ${missing}`);
    const wrong = await rejectionOf(readImageInput(42 as unknown as ImageInput, undefined));
    expect({ code: wrong.code, message: wrong.message }).toEqual({
      code: 'invalid_request',
      message: 'the image must be a Buffer, Uint8Array, ArrayBuffer, Blob, file path or URL; got number',
    });
  });
});
