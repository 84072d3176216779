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

/** The mask's name without its extension: `base` + this is the stem another input's cutout could have. */
const MASK_STEM = MASK_SUFFIX.slice(0, MASK_SUFFIX.lastIndexOf('.'));

/** With masks beside the cutouts, photo.mask.jpg's cutout would be photo.jpg's mask (photo.mask.png): such a
 * `base`, when the other one is among `bases`, keeps its source extension as a shared name does. */
function masksClash(base: string, bases: { has(base: string): boolean }, mask: MaskOutput): boolean {
  return mask === 'beside' && base.endsWith(MASK_STEM) && bases.has(base.slice(0, -MASK_STEM.length));
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
  const alone = (base: string, group: InputItem[]) => group.length === 1 && !masksClash(base, groups, mask);
  for (const [base, group] of groups) {
    if (alone(base, group)) {
      slots.set(group[0] as InputItem, { base, extensions, mask });
      taken.add(base);
    }
  }
  for (const [base, group] of groups) {
    if (alone(base, group)) continue;
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
  // An arrival whose mask would be an earlier input's cutout moves too (that one's slot never changes).
  const clash =
    taken.has(plain) || masksClash(plain, taken, mask) || (mask === 'beside' && taken.has(plain + MASK_STEM));
  const candidate = clash ? join(dirname(plain), parse(item.relativePath).base) : plain;
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
