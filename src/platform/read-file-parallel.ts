// Reads a large file in a few parts at once on libuv's thread pool. For the 176 MB cached graph most of a
// read's time is the kernel faulting in and filling the fresh buffer's pages, which several threads do side by
// side: 4 parts took 96–97 ms against 162–169 ms for readFileSync (bench/RESULTS.md).

import { open } from 'node:fs/promises';

const PARTS = 4;

export async function readFileParallel(path: string): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    // Not from Buffer's pool: the session holds these bytes for its life (allocUnsafeSlow, every byte is read).
    const bytes = Buffer.allocUnsafeSlow(size);
    const step = Math.ceil(size / PARTS);
    await Promise.all(
      Array.from({ length: PARTS }, async (_, part) => {
        let at = part * step;
        const end = Math.min(size, at + step);
        while (at < end) {
          const { bytesRead } = await file.read(bytes, at, end - at, at);
          if (bytesRead === 0) throw new Error(`${path} ended at byte ${at} of ${size} while it was read`);
          at += bytesRead;
        }
      }),
    );
    return bytes;
  } finally {
    await file.close();
  }
}
