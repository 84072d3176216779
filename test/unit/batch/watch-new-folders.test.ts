// A folder copied into a watched folder: its subfolders are made and filled at once, so a photo can land between
// chokidar's first read of a new folder and its watch on it (chokidar #1112, #1471), where chokidar never
// reports it. Every photo must still arrive, once.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { STABLE_MS } from '../../../src/batch/watch-inputs.js';
import { jpegPhoto } from '../../helpers/hostile-images.js';
import { collectArrivals } from '../../helpers/watch-arrivals.js';

let work: string;
afterEach(() => rmSync(work, { recursive: true, force: true }));

it('reports every photo of subfolders made and filled at once, each once', async () => {
  work = mkdtempSync(join(tmpdir(), 'rmbg-watch-new-folders-'));
  const watched = join(work, 'in');
  mkdirSync(watched);
  const photo = await jpegPhoto(40, 30);
  const expected: string[] = [];
  const { watching, collected, stop } = collectArrivals(
    work,
    watched,
    (_item, seen) => seen.length === expected.length,
  );
  await watching;
  // Another process copies, as a user's `cp -r` does, while this one watches.
  writeFileSync(join(work, 'photo.jpg'), photo);
  const count = 200;
  for (let i = 0; i < count; i++) expected.push(join(`shoot-${i}`, 'day', 'photo.jpg'));
  const script = `for i in $(seq 0 ${count - 1}); do mkdir -p in/shoot-$i/day && cp photo.jpg in/shoot-$i/day/photo.jpg; done`;
  await promisify(execFile)('sh', ['-c', script], { cwd: work });
  // A bound on the wait, not a synchronisation: a photo missed never arrives, and the list below says which.
  const bound = setTimeout(() => stop.abort(), 10 * STABLE_MS);
  const seen = await collected;
  clearTimeout(bound);
  expect(seen.sort()).toEqual(expected.sort());
}, 60_000);
