// --watch does not follow symbolic links, as the folder walk does not: a link planted in a watched folder
// (x.jpg → a private file, a linked folder) is never an input, so it is neither read nor sent to a server;
// nor is a photo that a link replaced after the watch found it.

import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { DEFAULT_OPTIONS } from '../../../src/api/options.js';
import type { InputItem } from '../../../src/batch/discover-inputs.js';
import type { Remover } from '../../../src/batch/remover.js';
import type { BatchEvent, FileEvent } from '../../../src/batch/batch-events.js';
import { runBatch } from '../../../src/batch/run-batch.js';
import { watchInputs } from '../../../src/batch/watch-inputs.js';
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

it('does not read a photo that became a link between landing and being read: a clear error, nothing sent or written', async () => {
  work = mkdtempSync(join(tmpdir(), 'rmbg-watch-swap-'));
  const watched = join(work, 'in');
  const out = join(work, 'out');
  mkdirSync(watched);
  const outside = join(work, 'outside.jpg');
  writeFileSync(outside, await jpegPhoto(40, 30));
  writeFileSync(join(watched, 'swapped.jpg'), await jpegPhoto(40, 30));

  const stop = new AbortController();
  const sent: string[] = [];
  const events: BatchEvent[] = [];
  // Each arrival is swapped for a link to a file outside the watched folder after the watch found it, before its read.
  async function* swappedArrivals(signal: AbortSignal): AsyncGenerator<InputItem> {
    for await (const item of watchInputs([watched], signal, { recursive: false, outputDir: out })) {
      rmSync(item.path);
      symlinkSync(outside, item.path);
      yield item;
    }
  }
  const remover: Remover = {
    mode: 'remote',
    async remove(image, _options, call) {
      sent.push(call.filename as string);
      return {
        data: image,
        format: 'png',
        width: 1,
        height: 1,
        creditsCharged: 1,
        replayed: false,
        token: 'token-1',
        foreground: undefined,
        confidence: undefined,
      };
    },
    close: async () => undefined,
  };
  await runBatch({
    items: [],
    arrivals: swappedArrivals,
    outputDir: out,
    options: { ...DEFAULT_OPTIONS, format: 'png' },
    remover,
    concurrency: 1,
    overwrite: false,
    retryFailed: false,
    stop: stop.signal,
    onEvent: (event) => {
      events.push(event);
      if (event.type === 'file') stop.abort();
    },
  });
  const files = events.filter((event): event is FileEvent => event.type === 'file');
  expect(files.map(({ status, error }) => ({ status, code: error?.code }))).toEqual([
    { status: 'failed', code: 'io_error' },
  ]);
  expect(files[0]?.error?.message).toBe(
    `cannot read ${join(watched, 'swapped.jpg')}: it is a symbolic link now; links in a folder are not followed`,
  );
  expect(sent).toEqual([]);
  expect(readdirSync(out).filter((name) => !name.startsWith('.'))).toEqual([]);
});
