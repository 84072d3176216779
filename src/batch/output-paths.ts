// Output slots (folder + stem; format=auto decides the extension later), never two inputs on one output.

import { existsSync } from 'node:fs';
import { dirname, join, parse } from 'node:path';
import { AUTO_FORMAT, OUTPUT_FORMATS } from '../api/media-types.js';
import type { Format } from '../api/options.js';
import type { InputItem } from './discover-inputs.js';

/** The mask file beside its cutout (--mask, --mask-only): photo.mask.png beside photo.png. */
export const MASK_SUFFIX = '.mask.png';

/** Which files a run writes for each input: the cutout alone (undefined), with its mask, or the mask only. */
export type MaskOutput = 'beside' | 'only' | undefined;

export interface OutputSlot {
  /** Absolute path without extension. */
  base: string;
  /** Extensions this slot may be written with. */
  extensions: string[];
  mask?: MaskOutput;
}

export function possibleExtensions(format: Format): string[] {
  const formats = format === 'auto' ? [AUTO_FORMAT.transparent, AUTO_FORMAT.opaque] : [format];
  return formats.map((name) => OUTPUT_FORMATS[name].extension);
}

/**
 * A slot per input; inputs that would share one keep their source extension (photo.jpg.png), then a counter.
 * The inputs come sorted, so every run assigns the same slots, which resume relies on.
 */
export function assignOutputSlots(
  items: InputItem[],
  outputDir: string,
  format: Format,
  mask?: MaskOutput,
): Map<InputItem, OutputSlot> {
  const extensions = possibleExtensions(format);
  const groups = new Map<string, InputItem[]>();
  for (const item of items) {
    const base = plainBase(item, outputDir);
    groups.set(base, [...(groups.get(base) ?? []), item]);
  }
  const slots = new Map<InputItem, OutputSlot>();
  const taken = new Set<string>();
  for (const [base, group] of groups) {
    if (group.length === 1) {
      slots.set(group[0] as InputItem, { base, extensions, mask });
      taken.add(base);
    }
  }
  for (const [base, group] of groups) {
    if (group.length === 1) continue;
    for (const item of group) {
      slots.set(item, { base: claim(join(dirname(base), parse(item.relativePath).base), taken), extensions, mask });
    }
  }
  return slots;
}

/** The slot of an input arriving later (--watch): as above, but slots already given never change. */
export function addOutputSlot(
  item: InputItem,
  taken: Set<string>,
  outputDir: string,
  format: Format,
  mask?: MaskOutput,
): OutputSlot {
  const plain = plainBase(item, outputDir);
  const candidate = taken.has(plain) ? join(dirname(plain), parse(item.relativePath).base) : plain;
  return { base: claim(candidate, taken), extensions: possibleExtensions(format), mask };
}

/** DIR/<relative folder>/<stem>. */
function plainBase(item: InputItem, outputDir: string): string {
  const { dir, name } = parse(item.relativePath);
  return join(outputDir, dir, name);
}

/** `candidate`, or it with the first free counter; added to `taken`. */
function claim(candidate: string, taken: Set<string>): string {
  let claimed = candidate;
  for (let n = 2; taken.has(claimed); n++) claimed = `${candidate}-${n}`;
  taken.add(claimed);
  return claimed;
}

export const maskPathOf = (slot: OutputSlot): string => slot.base + MASK_SUFFIX;

/** The first existing cutout of a slot, if any. */
export function existingCutout(slot: OutputSlot): string | undefined {
  return slot.extensions.map((ext) => slot.base + ext).find((path) => existsSync(path));
}

/** The slot's output when every file this run writes for it is there (the cutout's path; with --mask-only the
 * mask's); undefined when one is missing, which a re-run makes. */
export function existingOutput(slot: OutputSlot): string | undefined {
  const cutout = slot.mask === 'only' ? undefined : existingCutout(slot);
  if (slot.mask === undefined) return cutout;
  if (!existsSync(maskPathOf(slot))) return undefined;
  return slot.mask === 'only' ? maskPathOf(slot) : cutout;
}
