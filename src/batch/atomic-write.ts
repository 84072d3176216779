// Output written to a temp file, fsynced and renamed: a killed run never leaves a partial file.

import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

const TEMP_MARK = '.rmbg-partial-';

export async function writeFileAtomic(path: string, data: Buffer): Promise<void> {
  const folder = dirname(path);
  await mkdir(folder, { recursive: true });
  const temp = join(folder, `.${basename(path)}${TEMP_MARK}${process.pid}-${randomBytes(4).toString('hex')}`);
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temp, { force: true });
    throw error;
  }
  await handle.close();
  try {
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** Removes temp files left by a run that was killed mid-write (they are never valid outputs). */
export async function removeStaleTempFiles(folder: string, recursive = true): Promise<number> {
  let removed = 0;
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const path = join(folder, entry.name);
    if (entry.isDirectory() && recursive) removed += await removeStaleTempFiles(path);
    else if (entry.isFile() && entry.name.startsWith('.') && entry.name.includes(TEMP_MARK)) {
      await rm(path, { force: true });
      removed++;
    }
  }
  return removed;
}
