// Shared by the remove-* e2e tests: lays out input folders, gives the CLI a quick model, and inspects what the
// CLI left on disk (cut-out PNGs, leftover temp files), reading real files with real sharp.

import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { expect } from 'vitest';
import { writeRedChannelModel } from './onnx-writer.js';
import { rmbg } from './cli.js';

/**
 * The quick model: a user model added with `rmbg models add` to `dataDir` (a 1×1 convolution of the red channel,
 * 64×48 input, mean 215 and std 25 on 0–255), which cuts jpegPhoto's and pngPhoto's disc out as the real model does
 * (the pale backdrop, red 206, transparent; the orange disc, red about 240, opaque) in milliseconds. For tests of
 * the batch and the command line, where the real model's seconds per image only slow the run down.
 * Returns the environment every run using it needs (its data and cache folders); pass QUICK_MODEL as flags.
 */
export async function addQuickModel(dataDir: string): Promise<Record<string, string>> {
  const env = { RMBG_DATA_DIR: dataDir, XDG_CACHE_HOME: path.join(dataDir, 'cache') };
  const file = path.join(dataDir, 'quick.onnx');
  mkdirSync(dataDir, { recursive: true });
  writeRedChannelModel(file, { width: 64, height: 48, bias: 0 });
  const contract = [
    '--input-size',
    '64x48',
    '--mean',
    '215',
    '--std',
    '25',
    '--range',
    '0-255',
    '--activation',
    'none',
  ];
  const added = await rmbg(['models', 'add', 'quick', file, ...contract], { env });
  if (added.exitCode !== 0) throw new Error(`models add failed: ${added.stderr}`);
  return env;
}

export const QUICK_MODEL = ['--model', 'quick'];

/** Writes { 'sub/a.jpg': bytes, … } under root, creating folders. */
export function writeTree(root: string, files: Record<string, Buffer | string>): void {
  for (const [name, data] of Object.entries(files)) {
    const full = path.join(root, name);
    mkdirSync(path.dirname(full), { recursive: true });
    writeFileSync(full, data);
  }
}

/** Every file under folder (hidden ones too), as sorted paths relative to it with '/' separators. */
export function listFiles(folder: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else found.push(path.relative(folder, full).split(path.sep).join('/'));
    }
  };
  walk(folder);
  return found.sort();
}

/** Files a run may leave beside its outputs on purpose: the resume journal (the lock is removed on exit)… */
export const JOURNAL = '.rmbg-journal.jsonl';
/** …and, once a cutout is written, the page of cutouts to check (src/batch/review-page.ts). */
export const REVIEW_PAGE = 'review.html';

/** Temp files of the atomic writer (`.<name>.rmbg-partial-<pid>-<hex>`): never valid outputs, never left behind. */
export function partialFiles(folder: string): string[] {
  return listFiles(folder).filter((name) => name.includes('.rmbg-partial-'));
}

/**
 * Asserts that file is a PNG cut-out of the given size with a real alpha channel, and that the background was
 * removed around a centred subject (jpegPhoto's disc): corners transparent, centre opaque.
 */
export async function expectCutout(file: string, width: number, height: number): Promise<void> {
  const image = sharp(file);
  const meta = await image.metadata();
  expect({ format: meta.format, width: meta.width, height: meta.height, channels: meta.channels }).toEqual({
    format: 'png',
    width,
    height,
    channels: 4,
  });
  const alpha = await image.extractChannel(3).raw().toBuffer();
  const at = (x: number, y: number) => alpha[y * width + x] as number;
  expect(at(1, 1), 'top-left corner is background').toBeLessThan(64);
  expect(at(width - 2, height - 2), 'bottom-right corner is background').toBeLessThan(64);
  expect(at(Math.floor(width / 2), Math.floor(height / 2)), 'centre is the subject').toBeGreaterThan(192);
}
