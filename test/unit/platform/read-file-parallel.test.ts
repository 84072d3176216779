// readFileParallel reads the cached model graph in parts at once; whatever the file's size, the bytes must be
// exactly the file's.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileParallel } from '../../../src/platform/read-file-parallel.js';
import { seededRandom } from '../../helpers/seeded-random.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rmbg-read-parallel-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readFileParallel', () => {
  it.each([0, 1, 3, 4, 5, 4096 * 3 + 7, 3 * 1024 * 1024 + 1])(
    'returns the exact bytes of a %i-byte file',
    async (size) => {
      const next = seededRandom(size + 1);
      const bytes = Buffer.from(Array.from({ length: size }, () => Math.floor(next() * 256)));
      const file = join(dir, `file-${size}`);
      await writeFile(file, bytes);
      const read = await readFileParallel(file);
      expect(read.length).toBe(size);
      expect(read.equals(bytes)).toBe(true);
    },
  );

  it('rejects a missing file with its ENOENT', async () => {
    await expect(readFileParallel(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
