// --watch does not follow symbolic links, as the folder walk does not: a link planted in a watched folder
// (x.jpg → a private file, a linked folder) is never an input, so it is neither read nor sent to a server.

import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { jpegPhoto } from '../../helpers/hostile-images.js';
import { watchInputs } from '../../../src/batch/watch-inputs.js';

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

  const stop = new AbortController();
  let ready: () => void = () => {};
  const watching = new Promise<void>((resolve) => (ready = resolve));
  const arrivals = watchInputs([watched], stop.signal, {
    recursive: true,
    outputDir: join(work, 'out'),
    onReady: ready,
  });
  const seen: string[] = [];
  const collected = (async () => {
    for await (const item of arrivals) {
      seen.push(item.relativePath);
      if (item.path.endsWith('last.jpg')) stop.abort();
    }
  })();
  await watching;
  // Planted while watching, before the last photo lands.
  symlinkSync(join(secrets, 'id_rsa'), join(watched, 'y.jpg'));
  writeFileSync(join(watched, 'last.jpg'), photo);
  await collected;
  expect(seen.sort()).toEqual(['first.jpg', 'last.jpg']);
});
