// Inputs from files and folders: named files always, in folders only image extensions (sidecars are no failures,
// but they are counted by extension, so the summary says what was passed over). A RAW and a JPEG of one shot
// (IMG_0001.CR2 + IMG_0001.JPG) are a pair: one of them is processed, as --raw-pairs says.

import { readdir, stat } from 'node:fs/promises';
import { basename, join, parse, relative, resolve, sep } from 'node:path';
import { RmbgError } from '../api/errors.js';
import { PHOTO_EXTENSIONS, RAW_FORMATS } from '../api/media-types.js';
import type { BATCH_SETTINGS } from '../settings/remove.js';

const IMAGE_EXTENSIONS: ReadonlySet<string> = new Set(PHOTO_EXTENSIONS);
const RAW_EXTENSIONS: ReadonlySet<string> = new Set(Object.values(RAW_FORMATS).flatMap((format) => format.extensions));
const JPEG_EXTENSIONS: ReadonlySet<string> = new Set(['.jpg', '.jpeg']);

/** Which of a RAW+JPEG pair is processed (settings/remove.ts `rawPairs`). */
export type RawPairs = (typeof BATCH_SETTINGS)['rawPairs']['choices'][number];

/** What a folder walk passed over, as the batch's summary reports it (its fields are the summary's). */
export interface PassedOver {
  /** Files in the folders that rmbg does not read, counted by extension (`(none)` for a name without one). */
  ignored?: { count: number; byExtension: Record<string, number> };
  /** RAW+JPEG pairs of one shot, and which of each was processed (with `both`, both, under names kept apart). */
  rawPairs?: { count: number; processed: RawPairs };
}

export interface DiscoveredInputs extends PassedOver {
  items: InputItem[];
}

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
  ignored: Map<string, number>,
): Promise<void> {
  const entries = await readdir(folder, { withFileTypes: true });
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue; // hidden files, our journal and temp files
    const path = join(folder, entry.name);
    if (isInside(path, exclude)) continue; // never feed our own outputs back in
    if (entry.isDirectory()) {
      if (recursive) await walk(path, root, recursive, exclude, found, ignored);
    } else if (entry.isFile() && IMAGE_EXTENSIONS.has(extensionOf(entry.name))) {
      found.push({ path, relativePath: relative(root, path) });
    } else if (entry.isFile()) {
      const extension = extensionOf(entry.name) || '(none)';
      ignored.set(extension, (ignored.get(extension) ?? 0) + 1);
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
  options: { recursive: boolean; outputDir: string; rawPairs?: RawPairs | undefined },
): Promise<DiscoveredInputs> {
  const outputDir = resolve(options.outputDir);
  const found: InputItem[] = [];
  const ignored = new Map<string, number>();
  for (const input of inputs) {
    const path = resolve(input);
    const info = await stat(path).catch(() => undefined);
    if (!info) throw new RmbgError('usage_error', `input ${input} does not exist`);
    if (info.isDirectory()) {
      await walk(path, path, options.recursive, outputDir, found, ignored);
    } else if (info.isFile()) {
      found.push({ path, relativePath: basename(path), named: true });
    } else {
      throw new RmbgError('usage_error', `input ${input} is neither a file nor a folder`);
    }
  }
  // The same file named twice (or found through two inputs) is processed once.
  const unique = new Map(found.map((item) => [item.path, item]));
  const { items, pairs } = pairedOnce([...unique.values()], options.rawPairs ?? 'raw');
  // Sorted by output path, then source path: the order (and so collision names) never depends on argument order.
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const count = [...ignored.values()].reduce((sum, n) => sum + n, 0);
  return {
    items: items.sort((a, b) => compare(a.relativePath, b.relativePath) || compare(a.path, b.path)),
    ...(count > 0 && { ignored: { count, byExtension: byCount(ignored) } }),
    ...(pairs > 0 && { rawPairs: { count: pairs, processed: options.rawPairs ?? 'raw' } }),
  };
}

/** The extensions most frequent first (then by name), as the summary lists them. */
function byCount(counts: Map<string, number>): Record<string, number> {
  return Object.fromEntries([...counts].sort(([a, m], [b, n]) => n - m || (a < b ? -1 : 1)));
}

/**
 * The items less the half of each RAW+JPEG pair not processed: a RAW and a JPEG in one folder with one stem are
 * one shot. With `both`, both stay; their outputs share a name, which output-paths.ts keeps apart (IMG_1.CR2.png).
 */
function pairedOnce(items: InputItem[], keep: RawPairs): { items: InputItem[]; pairs: number } {
  const shotOf = (item: InputItem) => {
    const { dir, name } = parse(item.path);
    return join(dir, name);
  };
  const raws = new Set(items.filter((item) => RAW_EXTENSIONS.has(extensionOf(item.path))).map(shotOf));
  const jpegs = new Set(items.filter((item) => JPEG_EXTENSIONS.has(extensionOf(item.path))).map(shotOf));
  const paired = new Set([...raws].filter((shot) => jpegs.has(shot)));
  if (keep === 'both' || paired.size === 0) return { items, pairs: paired.size };
  const dropped = keep === 'raw' ? JPEG_EXTENSIONS : RAW_EXTENSIONS;
  return {
    items: items.filter((item) => !(paired.has(shotOf(item)) && dropped.has(extensionOf(item.path)))),
    pairs: paired.size,
  };
}
