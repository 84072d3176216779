// Output slots of inputs that land during a watch: an arrival never moves a slot already given, and takes
// the same names a collision gets when the inputs are found together.

import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addOutputSlot, assignOutputSlots } from '../../../src/batch/output-paths.js';
import { watchedItem } from '../../../src/batch/discover-inputs.js';

const OUT = '/out';
const item = (relativePath: string) => ({ path: join('/in', relativePath), relativePath });

describe('addOutputSlot', () => {
  it('gives an arrival its plain name, or keeps its source extension (then a counter) when that is taken', () => {
    const first = item('photo.jpg');
    const slots = assignOutputSlots([first], OUT, 'png');
    const taken = new Set([...slots.values()].map((slot) => slot.base));
    expect(slots.get(first)?.base).toBe('/out/photo');
    expect(addOutputSlot(item('photo.png'), taken, OUT, 'png')).toEqual({
      base: '/out/photo.png',
      extensions: ['.png'],
    });
    expect(addOutputSlot(item('sub/photo.png'), taken, OUT, 'auto')).toEqual({
      base: '/out/sub/photo',
      extensions: ['.png', '.jpg'],
    });
    expect(addOutputSlot(item('photo.png'), taken, OUT, 'png').base).toBe('/out/photo.png-2');
    expect(slots.get(first)?.base).toBe('/out/photo');
  });
});

describe('masks beside the cutouts', () => {
  it('never lets one input’s cutout be another’s mask (photo.mask.jpg’s cutout and photo.jpg’s mask)', () => {
    const [photo, named] = [item('photo.jpg'), item('photo.mask.jpg')];
    const slots = assignOutputSlots([photo, named], OUT, 'png', 'beside');
    expect(slots.get(photo)?.base).toBe('/out/photo');
    expect(slots.get(named)?.base).toBe('/out/photo.mask.jpg');
    // Only the mask file is written: photo.mask.png is then nobody's cutout.
    expect(assignOutputSlots([photo, named], OUT, 'png', 'only').get(named)?.base).toBe('/out/photo.mask');
  });

  it('moves an arrival whose cutout or mask would be an earlier input’s mask or cutout', () => {
    const taken = new Set(['/out/photo']);
    expect(addOutputSlot(item('photo.mask.jpg'), taken, OUT, 'png', 'beside').base).toBe('/out/photo.mask.jpg');
    const earlier = new Set(['/out/photo.mask']);
    expect(addOutputSlot(item('photo.jpg'), earlier, OUT, 'png', 'beside').base).toBe('/out/photo.jpg');
    expect(addOutputSlot(item('photo.jpg'), new Set(['/out/photo.mask']), OUT, 'png').base).toBe('/out/photo');
  });
});

describe('watchedItem', () => {
  const rules = { recursive: false, outputDir: '/in/out' };
  it('takes images at the top of the folder, and in subfolders only when recursive', () => {
    expect(watchedItem('/in/a.JPG', '/in', rules)).toEqual({ path: '/in/a.JPG', relativePath: 'a.JPG' });
    expect(watchedItem('/in/sub/a.webp', '/in', rules)).toBeUndefined();
    expect(watchedItem('/in/sub/a.webp', '/in', { ...rules, recursive: true })).toEqual({
      path: '/in/sub/a.webp',
      relativePath: 'sub/a.webp',
    });
  });
  it('leaves out other files, hidden files and folders, and the output folder', () => {
    const recursive = { ...rules, recursive: true };
    for (const path of [
      '/in/notes.txt',
      '/in/a.gif',
      '/in/.a.jpg',
      '/in/.cache/a.jpg',
      '/in/out/a.png',
      '/elsewhere/a.jpg',
    ]) {
      expect(watchedItem(path, '/in', recursive), path).toBeUndefined();
    }
  });
});
