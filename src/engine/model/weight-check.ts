// Verifying weights by sha256 without reading 88–176 MB at every start.

import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, statSync, writeFileSync } from 'node:fs';

export type DigestName = 'md5' | 'sha256';

/** The file's digests by each of `algorithms`, from one read of it (a model is 5 MB to 1 GB). */
export async function fileDigests<A extends DigestName>(path: string, algorithms: A[]): Promise<Record<A, string>> {
  const hashes = algorithms.map((algorithm) => createHash(algorithm));
  for await (const chunk of createReadStream(path, { highWaterMark: 4 * 1024 * 1024 }))
    for (const hash of hashes) hash.update(chunk as Buffer);
  return Object.fromEntries(algorithms.map((algorithm, i) => [algorithm, hashes[i]?.digest('hex')])) as Record<
    A,
    string
  >;
}

export async function sha256OfFile(path: string): Promise<string> {
  return (await fileDigests(path, ['sha256'])).sha256;
}

/** `<model>.verified`: size, mtime and sha256 at the last hash; while size and mtime hold, no re-hash
 * (bench/RESULTS.md, "Figures behind the engine's comments"). */
interface VerifyStamp {
  bytes: number;
  mtimeMs: number;
  sha256: string;
}

export const stampPathOf = (modelPath: string): string => `${modelPath}.verified`;

function readStamp(modelPath: string): VerifyStamp | undefined {
  try {
    return JSON.parse(readFileSync(stampPathOf(modelPath), 'utf8')) as VerifyStamp;
  } catch {
    return undefined;
  }
}

function writeStamp(modelPath: string, stamp: VerifyStamp): void {
  // Written last, after the hash matched: a stamp never vouches for bytes that were not read.
  try {
    writeFileSync(stampPathOf(modelPath), `${JSON.stringify(stamp)}\n`);
  } catch {
    // A read-only install folder: verify by hashing each time, as before.
  }
}

/** Whether the file at `path` has `bytes` bytes and the sha256 `expected`, hashing only when its stamp is stale. */
export async function fileMatches(path: string, bytes: number, expected: string): Promise<boolean> {
  const { size, mtimeMs } = statSync(path);
  if (size !== bytes) return false;
  const stamp = readStamp(path);
  if (stamp && stamp.bytes === size && stamp.mtimeMs === mtimeMs && stamp.sha256 === expected) return true;
  const actual = await sha256OfFile(path);
  if (actual !== expected) return false;
  writeStamp(path, { bytes: size, mtimeMs, sha256: actual });
  return true;
}

/** Hashes a file just written (e.g. a model copied in by `rmbg models add`) and stamps it as verified. */
export async function hashAndStamp(path: string): Promise<string> {
  const sha256 = await sha256OfFile(path);
  stampVerified(path, sha256);
  return sha256;
}

/** Stamps a file as verified with the sha256 its bytes were just read to (a rename keeps size and mtime). */
export function stampVerified(path: string, sha256: string): void {
  const { size, mtimeMs } = statSync(path);
  writeStamp(path, { bytes: size, mtimeMs, sha256 });
}
