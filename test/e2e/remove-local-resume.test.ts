// Re-runs and planning of a local batch: a photo that failed for good is retried once it was replaced,
// --dry-run lists the work and touches nothing; and usage errors of nested commands exit 2.

import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegPhoto, truncatedJpeg } from '../fixtures/hostile-images.js';
import { ensureBuilt, jsonLines, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe('local re-runs', () => {
  it('--dry-run lists what would be processed and writes nothing; a replaced photo is no longer "failed before"', async () => {
    const input = tempDir();
    const out = path.join(tempDir(), 'cutouts');
    writeFileSync(path.join(input, 'photo.jpg'), await truncatedJpeg());

    const dry = await rmbg(['remove', input, '--local', '-o', out, '--dry-run']);
    expect(dry.exitCode).toBe(0);
    expect(dry.stdout).toContain(`would process ${path.join(input, 'photo.jpg')}`);
    expect(dry.stdout).toContain('0 credits');
    expect(existsSync(out)).toBe(false);

    const first = await rmbg(['remove', input, '--local', '-o', out, '--size', 'preview']);
    expect(first.exitCode).toBe(1);
    expect(jsonLines(first.stdout)[0]).toMatchObject({ status: 'failed', error: { code: 'corrupt_image' } });

    const again = await rmbg(['remove', input, '--local', '-o', out, '--size', 'preview']);
    expect(again.exitCode).toBe(1);
    expect(jsonLines(again.stdout)[0]).toMatchObject({ status: 'skipped', reason: 'failed-before' });

    writeFileSync(path.join(input, 'photo.jpg'), await jpegPhoto(200, 150));
    const replaced = await rmbg(['remove', input, '--local', '-o', out, '--size', 'preview']);
    expect(replaced.exitCode).toBe(0);
    expect(jsonLines(replaced.stdout)[0]).toMatchObject({
      status: 'done',
      output: path.join(out, 'photo.png'),
      width: 200,
      height: 150,
    });
    expect(readdirSync(out).sort()).toEqual(['.rmbg-journal.jsonl', 'photo.png']);
  });
});

describe('usage errors of nested commands', () => {
  it.each([
    [['keys', 'create', '--plan', 'gold'], 'Allowed choices are pro, enterprise, free'],
    [
      ['credits', 'add', '5'],
      'name the account: --key-id ID (from `rmbg keys list`), --key - (the key on stdin), or RMBG_API_KEY',
    ],
    [['config', 'sett', 'size', 'hd'], "unknown action 'sett'"],
  ])('rmbg %j exits 2 with a message', async (args, message) => {
    const dataDir = tempDir();
    const result = await rmbg([...args, ...(args[0] === 'config' ? [] : ['--data-dir', dataDir])]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(message);
  });
});
