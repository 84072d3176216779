// `rmbg remove DIR --watch`: the real CLI keeps running and processes photos as they land (subfolders with
// --recursive), only once a file has stopped growing; Ctrl-C ends it with the batch's exit codes, and the
// outputs and journal are those of an ordinary run (a re-run skips every photo). The model is the tiny
// identity network (fast; results keep the photo's size): these tests are about arrivals, not the cut.

import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gif, jpegPhoto, noisyJpeg } from '../helpers/hostile-images.js';
import { ensureBuilt, jsonLines, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { writeIdentityModel } from '../helpers/onnx-writer.js';

const ROCKET = readFileSync(path.join(import.meta.dirname, '..', '..', 'samples', 'rocket.jpg'));
let model: string;

beforeAll(() => {
  ensureBuilt();
  model = path.join(tempDir(), 'identity.onnx');
  writeIdentityModel(model, 'input', 'output');
});

afterAll(removeTempDirs);

/** `rmbg remove in -o out --watch --json …` in `work`, with its JSON lines and stderr followed as they come. */
function startWatch(work: string, flags: string[] = []) {
  const child = rmbg(['remove', 'in', '-o', 'out', '--watch', '--json', '--local', '--model', model, ...flags], {
    cwd: work,
  });
  let stdout = '';
  let stderr = '';
  const arrivedAt = new Map<string, number>();
  const waiters: Array<() => void> = [];
  const changed = () => {
    for (const wake of waiters.splice(0)) wake();
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const line of jsonLines(stdout))
      if (typeof line.input === 'string' && !arrivedAt.has(line.input)) arrivedAt.set(line.input, Date.now());
    changed();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    changed();
  });
  void child.then(changed);
  /**
   * Resolves once the condition holds, re-checked on every line the CLI writes; fails if the CLI exits first, or
   * after 90 s with what it wrote so far (a hang then says where it stood, before the test's own time-out).
   */
  const until = async (what: string, holds: () => boolean) => {
    const failAfter = Date.now() + 90_000;
    const timer = setInterval(changed, 1_000);
    try {
      while (!holds()) {
        if (child.exitCode !== null)
          throw new Error(`rmbg exited (${child.exitCode}) before: ${what}\nstdout:\n${stdout}\nstderr:\n${stderr}`);
        if (Date.now() > failAfter)
          throw new Error(`still waiting after 90 s for: ${what}\nstdout:\n${stdout}\nstderr:\n${stderr}`);
        await new Promise<void>((wake) => waiters.push(wake));
      }
    } finally {
      clearInterval(timer);
    }
  };
  const lineFor = (input: string) => jsonLines(stdout).find((line) => line.input === path.join(work, 'in', input));
  return { child, until, lineFor, arrivedAt, stdout: () => stdout, stderr: () => stderr };
}

describe('rmbg remove DIR --watch', () => {
  it('processes photos already there and those that land later (subfolders too), each once it stops growing; Ctrl-C exits 0', async () => {
    const work = tempDir();
    mkdirSync(path.join(work, 'in'));
    writeFileSync(path.join(work, 'in', 'first.jpg'), await jpegPhoto(200, 150));
    const watch = startWatch(work, ['--recursive']);
    await watch.until('watching', () => watch.stderr().includes('rmbg: watching in for new photos'));
    await watch.until('first.jpg done', () => watch.lineFor('first.jpg') !== undefined);

    // A slow copy: the rocket arrives in 20 pieces, 100 ms apart (well inside the 2 s it must stay the same
    // size). Read any earlier, it would be a truncated JPEG: a failed line, or a result before the last piece.
    mkdirSync(path.join(work, 'in', 'sub'));
    copyFileSync(
      path.join(import.meta.dirname, '..', '..', 'samples', 'chelsea.png'),
      path.join(work, 'in', 'sub', 'cat.png'),
    );
    writeFileSync(path.join(work, 'in', 'notes.txt'), 'not a photo');
    writeFileSync(path.join(work, 'in', '.hidden.jpg'), await jpegPhoto(200, 150));
    const target = path.join(work, 'in', 'rocket.jpg');
    const piece = Math.ceil(ROCKET.length / 20);
    for (let at = 0; at < ROCKET.length; at += piece) {
      appendFileSync(target, ROCKET.subarray(at, at + piece));
      await new Promise((done) => setTimeout(done, 100)); // the pace of the copy being simulated, not a wait for rmbg
    }
    const lastPiece = Date.now();
    await watch.until(
      'rocket.jpg and sub/cat.png done',
      () => watch.lineFor('rocket.jpg') !== undefined && watch.lineFor(path.join('sub', 'cat.png')) !== undefined,
    );

    expect(watch.lineFor('rocket.jpg')).toMatchObject({
      status: 'done',
      width: 640,
      height: 427,
      output: path.join(work, 'out', 'rocket.png'),
      error: null,
    });
    expect(watch.arrivedAt.get(target)).toBeGreaterThanOrEqual(lastPiece);
    expect(watch.lineFor(path.join('sub', 'cat.png'))).toMatchObject({
      status: 'done',
      width: 451,
      height: 300,
      output: path.join(work, 'out', 'sub', 'cat.png'),
    });
    expect(await sharp(path.join(work, 'out', 'rocket.png')).metadata()).toMatchObject({
      format: 'png',
      width: 640,
      height: 427,
    });

    watch.child.kill('SIGINT');
    const result = await watch.child;
    expect(result.exitCode, watch.stderr()).toBe(0);
    const lines = jsonLines(watch.stdout());
    expect(
      lines
        .filter((line) => !line.summary)
        .map((line) => path.relative(path.join(work, 'in'), line.input as string))
        .sort(),
    ).toEqual(['first.jpg', 'rocket.jpg', path.join('sub', 'cat.png')]);
    expect(lines.at(-1)).toMatchObject({ summary: true, total: 3, done: 3, failed: 0, notStarted: 0, stoppedBy: null });

    // The same outputs and journal as an ordinary run: running it again skips every photo.
    const again = await rmbg(['remove', 'in', '-o', 'out', '--json', '--recursive', '--local', '--model', model], {
      cwd: work,
    });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(jsonLines(again.stdout).at(-1)).toMatchObject({ summary: true, total: 3, done: 0, skipped: 3 });
  });

  it('starts on an empty folder; a photo that fails is reported and Ctrl-C then exits 1; subfolders are left alone without --recursive', async () => {
    const work = tempDir();
    mkdirSync(path.join(work, 'in', 'sub'), { recursive: true });
    const watch = startWatch(work);
    await watch.until('watching', () => watch.stderr().includes('rmbg: watching'));
    writeFileSync(path.join(work, 'in', 'sub', 'deep.jpg'), await jpegPhoto(200, 150));
    writeFileSync(path.join(work, 'in', 'gif-named.png'), await gif());
    writeFileSync(path.join(work, 'in', 'good.jpg'), await jpegPhoto(200, 150));
    await watch.until(
      'both top-level files reported',
      () => watch.lineFor('gif-named.png') !== undefined && watch.lineFor('good.jpg') !== undefined,
    );
    expect(watch.lineFor('gif-named.png')).toMatchObject({
      status: 'failed',
      error: { code: 'unsupported_image_format' },
    });
    expect(watch.lineFor('good.jpg')).toMatchObject({ status: 'done' });

    watch.child.kill('SIGINT');
    expect((await watch.child).exitCode).toBe(1);
    expect(jsonLines(watch.stdout()).at(-1)).toMatchObject({ summary: true, total: 2, done: 1, failed: 1 });
    expect(existsSync(path.join(work, 'out', 'sub'))).toBe(false);
  });

  it('Ctrl-C finishes the photo in flight and exits 130 when photos that had landed were left; a re-run does the rest', async () => {
    const work = tempDir();
    // 6 MP noise: a full-size PNG of it takes long enough to encode that the second photo is still in flight
    // when the signal arrives (one at a time: --concurrency 1).
    const large = await noisyJpeg(3000, 2000, { background: '#6a8caf', mean: 120, sigma: 40, quality: 80 });
    mkdirSync(path.join(work, 'in'));
    for (const name of ['p1.jpg', 'p2.jpg', 'p3.jpg']) writeFileSync(path.join(work, 'in', name), large);
    const watch = startWatch(work, ['--concurrency', '1', '--size', 'full', '--format', 'png']);
    await watch.until('p1.jpg done', () => watch.lineFor('p1.jpg') !== undefined);
    watch.child.kill('SIGINT');
    const result = await watch.child;
    expect(result.exitCode, watch.stderr()).toBe(130);
    expect(watch.lineFor('p2.jpg')).toMatchObject({ status: 'done', width: 3000, height: 2000 });
    expect(jsonLines(watch.stdout()).at(-1)).toMatchObject({
      summary: true,
      total: 3,
      done: 2,
      notStarted: 1,
      stoppedBy: 'interrupted',
    });
    expect(existsSync(path.join(work, 'out', 'p3.png'))).toBe(false);

    const again = await rmbg(
      ['remove', 'in', '-o', 'out', '--json', '--local', '--model', model, '--size', 'full', '--format', 'png'],
      { cwd: work },
    );
    expect(again.exitCode, again.stderr).toBe(0);
    expect(jsonLines(again.stdout).at(-1)).toMatchObject({ summary: true, total: 3, done: 1, skipped: 2 });
  });

  it('is a usage error (exit 2) on files only, and with --dry-run', async () => {
    const work = tempDir();
    writeFileSync(path.join(work, 'photo.jpg'), await jpegPhoto(200, 150));
    const onFile = await rmbg(['remove', 'photo.jpg', '--watch', '--local'], { cwd: work });
    expect([onFile.exitCode, onFile.stderr]).toEqual([
      2,
      expect.stringContaining('--watch needs a folder to watch; photo.jpg is not one'),
    ]);
    const dry = await rmbg(['remove', '.', '--watch', '--dry-run', '--local'], { cwd: work });
    expect([dry.exitCode, dry.stderr]).toEqual([
      2,
      expect.stringContaining('--watch cannot be combined with --dry-run'),
    ]);
  });
});
