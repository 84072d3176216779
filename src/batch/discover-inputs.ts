// Inputs from files and folders: named files always, in folders only image extensions (sidecars are no failures).

import { readdir, stat } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { RmbgError } from '../api/errors.js';
import { PHOTO_EXTENSIONS } from '../api/media-types.js';

const IMAGE_EXTENSIONS: ReadonlySet<string> = new Set(PHOTO_EXTENSIONS);

export interface InputItem {
  /** Absolute path of the source image. */
  path: string;
  /** Path relative to the output folder, without extension handling: `sub/photo.jpg`. */
  relativePath: string;
  /** Named on the command line, so read through a link; one found in a folder is not (read-input.ts). */
  named?: true;
}

function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot).toLowerCase();
}

function isInside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

async function walk(
  folder: string,
  root: string,
  recursive: boolean,
  exclude: string,
  found: InputItem[],
): Promise<void> {
  const entries = await readdir(folder, { withFileTypes: true });
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue; // hidden files, our journal and temp files
    const path = join(folder, entry.name);
    if (isInside(path, exclude)) continue; // never feed our own outputs back in
    if (entry.isDirectory()) {
      if (recursive) await walk(path, root, recursive, exclude, found);
    } else if (entry.isFile() && IMAGE_EXTENSIONS.has(extensionOf(entry.name))) {
      found.push({ path, relativePath: relative(root, path) });
    }
  }
}

/** A file landing in a watched folder (--watch), taken by the same rules as the folder walk. */
export function watchedItem(
  path: string,
  root: string,
  options: { recursive: boolean; outputDir: string },
): InputItem | undefined {
  const relativePath = relative(root, path);
  const parts = relativePath.split(sep);
  if (!isInside(path, root) || isInside(path, resolve(options.outputDir))) return undefined;
  if (parts.some((part) => part.startsWith('.')) || (!options.recursive && parts.length > 1)) return undefined;
  return IMAGE_EXTENSIONS.has(extensionOf(path)) ? { path, relativePath } : undefined;
}

export async function discoverInputs(
  inputs: string[],
  options: { recursive: boolean; outputDir: string },
): Promise<InputItem[]> {
  const outputDir = resolve(options.outputDir);
  const found: InputItem[] = [];
  for (const input of inputs) {
    const path = resolve(input);
    const info = await stat(path).catch(() => undefined);
    if (!info) throw new RmbgError('usage_error', `input ${input} does not exist`);
    if (info.isDirectory()) {
      await walk(path, path, options.recursive, outputDir, found);
    } else if (info.isFile()) {
      found.push({ path, relativePath: basename(path), named: true });
    } else {
      throw new RmbgError('usage_error', `input ${input} is neither a file nor a folder`);
    }
  }
  // The same file named twice (or found through two inputs) is processed once.
  const unique = new Map(found.map((item) => [item.path, item]));
  // Sorted by output path, then source path: the order (and so collision names) never depends on argument order.
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...unique.values()].sort((a, b) => compare(a.relativePath, b.relativePath) || compare(a.path, b.path));
}
