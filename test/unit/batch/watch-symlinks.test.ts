// --watch does not follow symbolic links, as the folder walk does not: a link planted in a watched folder
// (x.jpg → a private file, a linked folder) is never an input, so it is neither read nor sent to a server.

import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { jpegPhoto } from '../../helpers/hostile-images.js';
import { collectArrivals } from '../../helpers/watch-arrivals.js';

let work: string;
afterEach(() => rmSync(work, { recursive: true, force: true }));

it('reports the photos that land, never a link to a file or into a folder, before or after the start', async () => {
  work = mkdtempSync(join(tmpdir(), 'rmbg-watch-links-'));
  const watched = join(work, 'in');
  const secrets = join(work, 'secrets');
  mkdirSync(watched);
  mkdirSync(secrets);
  const photo = await jpegPhoto(40, 30);
  writeFileSync(join(secrets, 'id_rsa'), 'PRIVATE KEY');
  writeFileSync(join(secrets, 'inside.jpg'), photo);
  symlinkSync(join(secrets, 'id_rsa'), join(watched, 'x.jpg'));
  symlinkSync(secrets, join(watched, 'linked'));
  writeFileSync(join(watched, 'first.jpg'), photo);

  const { watching, collected } = collectArrivals(work, watched, (item) => item.path.endsWith('last.jpg'));
  await watching;
  // Planted while watching, before the last photo lands.
  symlinkSync(join(secrets, 'id_rsa'), join(watched, 'y.jpg'));
  writeFileSync(join(watched, 'last.jpg'), photo);
  const seen = await collected;
  expect(seen.sort()).toEqual(['first.jpg', 'last.jpg']);
});
