// Reads an input's bytes. An input found in a folder (the walk, --watch) was a regular file when it was found; a link
// swapped in since must not be followed at read time either, or `x.jpg → ~/.ssh/id_rsa` would be read and sent.

import { constants } from 'node:fs';
import { lstat, open, readFile } from 'node:fs/promises';
import { RmbgError } from '../api/errors.js';
import type { InputItem } from './discover-inputs.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** The input's bytes; rejects with io_error when it cannot be read, or is no longer a regular file in its folder. */
export async function readInput(item: InputItem): Promise<Buffer> {
  const refuse = (why: string, cause?: unknown): never => {
    throw new RmbgError('io_error', `cannot read ${item.path}: ${why}`, { cause });
  };
  // A file named on the command line is read as named, through a link too: the user chose it.
  if (item.named) return readFile(item.path).catch((error: Error) => refuse(error.message, error));
  // O_NONBLOCK: a FIFO swapped in must not hang the open; it is refused below as not a regular file.
  const flags = O_RDONLY | (O_NOFOLLOW ?? 0) | (O_NONBLOCK ?? 0);
  const handle = await open(item.path, flags).catch((error: NodeJS.ErrnoException) =>
    // ELOOP (Linux, macOS) or EMLINK (FreeBSD): the last part of the path is a link.
    error.code === 'ELOOP' || error.code === 'EMLINK' ? refuse(SYMLINK, error) : refuse(error.message, error),
  );
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) refuse('it is not a regular file now');
    if (O_NOFOLLOW === undefined) {
      // No O_NOFOLLOW (Windows): the path must still name the very file opened, and not through a link.
      const named = await lstat(item.path).catch(() => undefined);
      if (!named || named.isSymbolicLink() || named.ino !== opened.ino || named.dev !== opened.dev) refuse(SYMLINK);
    }
    return await handle.readFile().catch((error: Error) => refuse(error.message, error));
  } finally {
    await handle.close();
  }
}

const SYMLINK = 'it is a symbolic link now; links in a folder are not followed';
