// Output naming: DIR/<relative folder>/<stem>.<ext>, keeping subfolders, and never two inputs on one output.
// With format=auto the extension (png or jpg) is known only after processing, so an output is a "slot"
// (folder + stem) with the extensions it may take; existence checks look at all of them.

import { existsSync } from 'node:fs';
import { dirname, join, parse } from 'node:path';
import type { Format, OutputFormat } from '../api/options.js';
import type { InputItem } from './discover-inputs.js';

export const EXTENSION: Record<OutputFormat, string> = { png: '.png', jpg: '.jpg', webp: '.webp' };

export interface OutputSlot {
  /** Absolute path without extension. */
  base: string;
  /** Extensions this slot may be written with. */
  extensions: string[];
}

export function possibleExtensions(format: Format): string[] {
  return format === 'auto' ? [EXTENSION.png, EXTENSION.jpg] : [EXTENSION[format]];
}

/**
 * Assigns each input a slot. Inputs that would share one (photo.jpg and photo.png in one folder, or two
 * explicit files with the same name) get their source extension kept (photo.jpg.png), then a counter.
 * Inputs arrive sorted, so the assignment is the same on every run, which resume relies on.
 */
export function assignOutputSlots(items: InputItem[], outputDir: string, format: Format): Map<InputItem, OutputSlot> {
  const extensions = possibleExtensions(format);
  const naive = (item: InputItem) => {
    const { dir, name } = parse(item.relativePath);
    return join(outputDir, dir, name);
  };
  const groups = new Map<string, InputItem[]>();
  for (const item of items) {
    const base = naive(item);
    groups.set(base, [...(groups.get(base) ?? []), item]);
  }
  const slots = new Map<InputItem, OutputSlot>();
  const taken = new Set<string>();
  for (const [base, group] of groups) {
    if (group.length === 1) {
      slots.set(group[0] as InputItem, { base, extensions });
      taken.add(base);
    }
  }
  for (const [base, group] of groups) {
    if (group.length === 1) continue;
    for (const item of group) {
      let candidate = join(dirname(base), parse(item.relativePath).base);
      for (let n = 2; taken.has(candidate); n++)
        candidate = `${join(dirname(base), parse(item.relativePath).base)}-${n}`;
      taken.add(candidate);
      slots.set(item, { base: candidate, extensions });
    }
  }
  return slots;
}

/**
 * The slot of an input that arrives after the others (rmbg remove --watch): its plain name, or, when an
 * earlier input holds that, the source extension kept and then a counter, as for inputs found together.
 * Slots already given never change. `taken` is updated.
 */
export function addOutputSlot(item: InputItem, taken: Set<string>, outputDir: string, format: Format): OutputSlot {
  const { dir, name, base: fileName } = parse(item.relativePath);
  let candidate = join(outputDir, dir, name);
  if (taken.has(candidate)) candidate = join(outputDir, dir, fileName);
  const first = candidate;
  for (let n = 2; taken.has(candidate); n++) candidate = `${first}-${n}`;
  taken.add(candidate);
  return { base: candidate, extensions: possibleExtensions(format) };
}

/** The first existing output of a slot, if any. */
export function existingOutput(slot: OutputSlot): string | undefined {
  return slot.extensions.map((ext) => slot.base + ext).find((path) => existsSync(path));
}
