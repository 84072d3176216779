// `--watch`: photos landing in the folders, each reported once it stopped growing, so none is read half-copied.

import { lstat, stat } from 'node:fs/promises';
import { relative, resolve, sep } from 'node:path';
import { watch } from 'chokidar';
import { RmbgError } from '../api/errors.js';
import { watchedItem, type InputItem } from './discover-inputs.js';

/** How long a file's size must stay the same before it counts as landed (a copy over a slow share pauses). */
export const STABLE_MS = 2000;

/** The folders among the inputs (files named among them are processed once, not watched); at least one. */
export async function foldersToWatch(inputs: readonly string[]): Promise<string[]> {
  const folders: string[] = [];
  for (const input of inputs) if ((await stat(input).catch(() => undefined))?.isDirectory()) folders.push(input);
  if (folders.length === 0)
    throw new RmbgError(
      'usage_error',
      `--watch needs a folder to watch; ${inputs.join(', ')} ${inputs.length === 1 ? 'is not one' : 'are not folders'}`,
    );
  return folders;
}

export interface WatchOptions {
  recursive: boolean;
  outputDir: string;
  /** Called once the folders are being watched: from then on no arrival is missed. */
  onReady?: () => void;
}

export async function* watchInputs(
  folders: string[],
  signal: AbortSignal,
  options: WatchOptions,
): AsyncGenerator<InputItem, void, undefined> {
  const roots = folders.map((folder) => resolve(folder));
  const outputDir = resolve(options.outputDir);
  const arrived: InputItem[] = [];
  let wake: (() => void) | undefined;
  let failure: unknown;
  const watcher = watch(roots, {
    ignoreInitial: false,
    awaitWriteFinish: { stabilityThreshold: STABLE_MS, pollInterval: 100 },
    depth: options.recursive ? undefined : 0,
    // As the folder walk (discover-inputs.ts): a symbolic link is not an input, so a planted `x.jpg → ~/.ssh/id_rsa`
    // is not read, nor sent to a server. chokidar still reports a link to a file: 'add' checks what it is.
    followSymlinks: false,
    ignored: (path) => ignored(path, roots, outputDir),
  });
  watcher.on('add', async (path) => {
    if (!(await lstat(path).catch(() => undefined))?.isFile()) return;
    const root = rootOf(path, roots);
    const item = root === undefined ? undefined : watchedItem(path, root, { recursive: options.recursive, outputDir });
    if (item) arrived.push(item);
    wake?.();
  });
  watcher.on('error', (error) => {
    failure = new RmbgError('io_error', `cannot watch ${folders.join(', ')}: ${(error as Error).message}`, {
      cause: error,
    });
    wake?.();
  });
  watcher.once('ready', () => options.onReady?.());
  const stop = () => wake?.();
  signal.addEventListener('abort', stop);
  try {
    for (;;) {
      const item = arrived.shift();
      if (item) yield item;
      else if (failure) throw failure;
      else if (signal.aborted) return;
      else await new Promise<void>((resolveWake) => (wake = resolveWake));
    }
  } finally {
    signal.removeEventListener('abort', stop);
    await watcher.close();
  }
}

/** The deepest watched folder a file is under: it decides the relative path, and so the output's subfolder. */
function rootOf(path: string, roots: string[]): string | undefined {
  return roots.filter((root) => path.startsWith(root + sep)).sort((a, b) => b.length - a.length)[0];
}

/** Never descend into our own outputs or hidden folders (the journal, temp files). */
function ignored(path: string, roots: string[], outputDir: string): boolean {
  if (path === outputDir || path.startsWith(outputDir + sep)) return true;
  const root = rootOf(path, roots);
  return (
    root !== undefined &&
    relative(root, path)
      .split(sep)
      .some((part) => part.startsWith('.'))
  );
}
