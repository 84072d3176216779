// Stopping `rmbg remove --local` mid-batch and running it again: Ctrl-C (SIGINT) finishes the file in flight,
// exits 130 and says how to resume; SIGKILL leaves a stale lock, maybe a temp file and a torn journal line.
// Either way the next run completes the rest, skips what was finished and leaves no partial files.

import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegPhoto } from '../fixtures/hostile-images.js';
import { ensureBuilt, jsonLines, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { expectCutout, JOURNAL, listFiles, partialFiles, writeTree } from './remove-local-files.js';

afterAll(removeTempDirs);
beforeAll(ensureBuilt);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const SIZES = { 'p1.jpg': [200, 150], 'p2.jpg': [180, 135], 'p3.jpg': [160, 120], 'p4.jpg': [140, 105] } as const;

async function photoFolder(names: Array<keyof typeof SIZES>): Promise<string> {
  const work = tempDir();
  const files: Record<string, Buffer> = {};
  for (const name of names) files[name] = await jpegPhoto(...SIZES[name]);
  writeTree(path.join(work, 'in'), files);
  return work;
}

/** Starts a one-at-a-time batch and sends `signal` as soon as the first cut-out is on disk (another is then in flight). */
async function interruptAfterFirstOutput(work: string, signal: NodeJS.Signals) {
  const child = rmbg(['remove', 'in', '-o', 'out', '--local', '--size', 'preview', '--concurrency', '1', '--json'], {
    cwd: work,
  });
  const first = path.join(work, 'out/p1.png');
  let exited = false;
  void child.finally(() => (exited = true));
  while (!existsSync(first) && !exited) await sleep(50);
  expect(exited, 'the batch was still running when the first cut-out appeared').toBe(false);
  child.kill(signal);
  return child;
}

const rerun = (work: string) =>
  rmbg(['remove', 'in', '-o', 'out', '--local', '--size', 'preview', '--concurrency', '1', '--json'], { cwd: work });

async function expectAllCutouts(work: string, names: Array<keyof typeof SIZES>): Promise<void> {
  for (const name of names) {
    const [width, height] = SIZES[name];
    await expectCutout(path.join(work, 'out', name.replace('.jpg', '.png')), width, height);
  }
  expect(listFiles(path.join(work, 'out'))).toEqual([JOURNAL, ...names.map((n) => n.replace('.jpg', '.png'))].sort());
}

describe('Ctrl-C during rmbg remove --local', () => {
  const names = ['p1.jpg', 'p2.jpg', 'p3.jpg'] as const;
  let work: string;
  let finished: string[];

  it('once: finishes the file in flight, starts no other, exits 130 with a resume hint, leaves only whole outputs', async () => {
    work = await photoFolder([...names]);
    const stopped = await interruptAfterFirstOutput(work, 'SIGINT');
    expect(stopped.exitCode).toBe(130);
    expect(stopped.stderr).toMatch(/run the same command again to resume/);
    const lines = jsonLines(stopped.stdout);
    const summary = lines.pop()!;
    expect(summary).toMatchObject({ summary: true, total: 3, failed: 0, stoppedBy: 'interrupted' });
    expect(summary.notStarted).toBeGreaterThanOrEqual(1);
    expect((summary.done as number) + (summary.notStarted as number)).toBe(3);
    finished = lines.filter((l) => l.status === 'done').map((l) => path.basename(l.input as string));
    expect(finished).toContain('p1.jpg');
    // Exactly the finished files are on disk, whole; no temp file, no lock.
    expect(listFiles(path.join(work, 'out'))).toEqual(
      [JOURNAL, ...finished.map((n) => n.replace('.jpg', '.png'))].sort(),
    );
  });

  it('twice (on the re-run): cancels the file in flight without leaving any of it', async () => {
    expect(finished, 'needs the first Ctrl-C').toBeDefined();
    const child = rerun(work);
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // The re-run skips the finished files; the first remaining one is in flight once the journal says 'sent'.
    const journal = path.join(work, 'out', JOURNAL);
    const before = readFileSync(journal, 'utf8').length;
    while (!readFileSync(journal, 'utf8').slice(before).includes('"state":"sent"') && child.exitCode === null)
      await sleep(20);
    child.kill('SIGINT');
    // A second signal sent before the first is handled would merge with it: wait for the first's message.
    while (!stderr.includes('Ctrl-C again') && child.exitCode === null) await sleep(20);
    child.kill('SIGINT');
    const cancelled = await child;
    expect(cancelled.exitCode).toBe(130);
    expect(cancelled.stderr).toMatch(/run the same command again to resume/);
    const lines = jsonLines(cancelled.stdout);
    expect(lines.pop()).toMatchObject({
      summary: true,
      total: 3,
      done: 0,
      skipped: finished.length,
      failed: 1,
      stoppedBy: 'interrupted',
    });
    expect(lines.find((l) => l.status === 'failed')).toMatchObject({ output: null, error: { code: 'interrupted' } });
    expect(listFiles(path.join(work, 'out'))).toEqual(
      [JOURNAL, ...finished.map((n) => n.replace('.jpg', '.png'))].sort(),
    );
  });

  it('the next run does only the rest, and every output is whole', async () => {
    expect(finished, 'needs the first Ctrl-C').toBeDefined();
    const resumed = await rerun(work);
    expect(resumed.exitCode).toBe(0);
    const again = jsonLines(resumed.stdout);
    expect(again.pop()).toMatchObject({
      summary: true,
      total: 3,
      done: 3 - finished.length,
      skipped: finished.length,
      failed: 0,
      notStarted: 0,
    });
    for (const line of again) {
      expect(line.status, String(line.input)).toBe(
        finished.includes(path.basename(line.input as string)) ? 'skipped' : 'done',
      );
    }
    await expectAllCutouts(work, [...names]);
  });
});

describe('SIGKILL during rmbg remove --local', () => {
  const names = ['p1.jpg', 'p2.jpg'] as const;

  it('a re-run clears the stale lock and temp files, keeps the journal readable and completes every output', async () => {
    const work = await photoFolder([...names]);
    const killed = await interruptAfterFirstOutput(work, 'SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    const out = path.join(work, 'out');
    // What a kill in the middle of writing p2's output and a journal line leaves (the timing cannot be forced):
    writeFileSync(path.join(out, `.p2.png.rmbg-partial-99999-0badf00d`), Buffer.from('\x89PNG\r\n\x1a\n half a file'));
    appendFileSync(path.join(out, JOURNAL), `{"input":"${path.join(work, 'in/p2.jpg')}","sta`);

    const resumed = await rerun(work);
    // Nothing about the lock, the temp files or the journal: only where the model runs (said once by --device auto).
    expect(resumed.stderr).toMatch(/^rmbg: the model is running on the (CPU|GPU \(WebGPU\)): [^\n]*$/);
    expect(resumed.exitCode).toBe(0);
    const lines = jsonLines(resumed.stdout);
    expect(lines.pop()).toMatchObject({ summary: true, total: 2, failed: 0, notStarted: 0 });
    expect(lines.find((l) => String(l.input).endsWith('p1.jpg'))).toMatchObject({
      status: 'skipped',
      reason: 'exists',
    });
    expect(lines.find((l) => String(l.input).endsWith('p2.jpg'))).toMatchObject({ status: 'done' });
    await expectAllCutouts(work, [...names]);
    expect(partialFiles(out)).toEqual([]);

    // The torn line stays alone on its line: every record the re-run appended is whole and readable.
    const journal = readFileSync(path.join(out, JOURNAL), 'utf8').split('\n').filter(Boolean);
    const torn = journal.findIndex((line) => line.endsWith('"sta'));
    expect(torn).toBeGreaterThanOrEqual(0);
    const appended = journal.slice(torn + 1).map((line) => JSON.parse(line) as { input: string; state: string });
    // p1 may have been killed between its output's rename and its 'done' line: the re-run then settles it as done.
    const p1 = appended.filter((r) => path.basename(r.input) === 'p1.jpg').map((r) => r.state);
    expect(p1.every((state) => state === 'done') && p1.length <= 1).toBe(true);
    expect(appended.filter((r) => path.basename(r.input) === 'p2.jpg').map((r) => r.state)).toEqual(['sent', 'done']);
  });
});

describe('the reader of stdout leaves (rmbg remove … | head -n 1)', () => {
  const names = ['p1.jpg', 'p2.jpg', 'p3.jpg', 'p4.jpg'] as const;

  it('stops as after one Ctrl-C: no EPIPE crash, exit 130, only whole outputs; a re-run completes the rest', async () => {
    const work = await photoFolder([...names]);
    const child = rerun(work);
    // Read the first JSON line, then close our end of the pipe, as `head -n 1` does.
    await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
    child.stdout!.destroy();
    const stopped = await child;
    expect(stopped.stderr).not.toMatch(/EPIPE|Error/);
    expect(stopped.stderr).toMatch(/run the same command again to resume/);
    expect(stopped.exitCode).toBe(130);
    const out = path.join(work, 'out');
    const written = listFiles(out).filter((name) => name !== JOURNAL);
    // The write that meets the closed pipe comes after the next file has started: at most 3 of 4 are done.
    expect(written.length).toBeLessThan(4);
    for (const name of written) expect(names.map((n) => n.replace('.jpg', '.png'))).toContain(name);

    const resumed = await rerun(work);
    expect(resumed.exitCode).toBe(0);
    await expectAllCutouts(work, [...names]);
  });
});
