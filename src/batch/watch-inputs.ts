// `--watch`: photos landing in the folders, each reported once it stopped growing, so none is read half-copied.

import { lstat, readdir, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { watch } from 'chokidar';
import { RmbgError, messageOf } from '../api/errors.js';
import { watchedItem, type InputItem } from './discover-inputs.js';

/** How long a file's size must stay the same before it counts as landed (a copy over a slow share pauses). */
export const STABLE_MS = 2000;
const POLL_MS = 100;

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
    awaitWriteFinish: { stabilityThreshold: STABLE_MS, pollInterval: POLL_MS },
    depth: options.recursive ? undefined : 0,
    // As the folder walk (discover-inputs.ts): a symbolic link is not an input, so a planted `x.jpg → ~/.ssh/id_rsa`
    // is not read, nor sent to a server. chokidar still reports a link to a file: `report` checks what it is.
    followSymlinks: false,
    ignored: (path) => ignored(path, roots, outputDir),
  });
  // Both chokidar and the sweeps below may find a file: it is reported once (again only after it was removed).
  const reported = new Set<string>();
  const report = async (path: string) => {
    if (reported.has(path) || !(await lstat(path).catch(() => undefined))?.isFile() || reported.has(path)) return;
    reported.add(path);
    const root = rootOf(path, roots);
    const item = root === undefined ? undefined : watchedItem(path, root, { recursive: options.recursive, outputDir });
    if (item) arrived.push(item);
    wake?.();
  };
  const sweeps = new AbortController();
  // chokidar reads a new folder before it watches it, so a file landing in between is never reported (chokidar
  // #1112, #1471; a folder copied in hits it): each folder is read again once chokidar watches it.
  const sweep = async (folder: string) => {
    try {
      await delay(STABLE_MS, undefined, { signal: sweeps.signal });
      const found = await filesUnder(folder, options.recursive, (path) => ignored(path, roots, outputDir));
      if (sweeps.signal.aborted) return;
      for (const file of found.files)
        if (!reported.has(file))
          void untilStable(file, sweeps.signal).then((stable) => (stable ? report(file) : undefined));
      // A subfolder made in that gap is not watched either: later arrivals in it need chokidar to watch it.
      const watched = watcher.getWatched();
      for (const subfolder of found.folders) if (!(subfolder in watched)) watcher.add(subfolder);
    } catch {} // stopped, or the folder is gone: nothing to report
  };
  let watching = false;
  watcher.on('add', report);
  watcher.on('unlink', (path) => reported.delete(path));
  watcher.on('addDir', (folder) => watching && options.recursive && void sweep(folder));
  watcher.on('error', (error) => {
    failure = new RmbgError('io_error', `cannot watch ${folders.join(', ')}: ${messageOf(error)}`, {
      cause: error,
    });
    wake?.();
  });
  watcher.once('ready', () => {
    watching = true;
    for (const root of roots) void sweep(root);
    options.onReady?.();
  });
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
    sweeps.abort();
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

/** The regular files and the folders under a folder (all levels when recursive), not following links, none ignored. */
async function filesUnder(
  folder: string,
  recursive: boolean,
  isIgnored: (path: string) => boolean,
  found: { files: string[]; folders: string[] } = { files: [], folders: [] },
): Promise<{ files: string[]; folders: string[] }> {
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (isIgnored(path)) continue;
    if (entry.isFile()) found.files.push(path);
    else if (recursive && entry.isDirectory()) {
      found.folders.push(path);
      await filesUnder(path, recursive, isIgnored, found);
    }
  }
  return found;
}

/** Whether the file's size held for STABLE_MS (as chokidar's awaitWriteFinish); false once it is gone. */
async function untilStable(path: string, signal: AbortSignal): Promise<boolean> {
  let size = -1;
  let since = Date.now();
  for (;;) {
    const now = (await stat(path).catch(() => undefined))?.size;
    if (now === undefined) return false;
    if (now !== size) [size, since] = [now, Date.now()];
    else if (Date.now() - since >= STABLE_MS) return true;
    await delay(POLL_MS, undefined, { signal }).catch(() => undefined);
    if (signal.aborted) return false;
  }
}
