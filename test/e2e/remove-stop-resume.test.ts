// Stopping `rmbg remove --local` mid-batch and running it again: Ctrl-C (SIGINT) finishes the file in flight,
// exits 130 and says how to resume; SIGKILL leaves a stale lock, maybe a temp file and a torn journal line.
// Either way the next run completes the rest, skips what was finished and leaves no partial files.

import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, jsonLines, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { warmKeyModel } from '../helpers/fast-models.js';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { type InferenceGate, inferenceGate } from '../helpers/inference-gate.js';
import {
  expectCutout,
  JOURNAL,
  listFiles,
  partialFiles,
  REVIEW_PAGE,
  writeTree,
} from '../helpers/remove-local-files.js';

afterAll(removeTempDirs);
beforeAll(ensureBuilt);

const SIZES = { 'p1.jpg': [200, 150], 'p2.jpg': [180, 135], 'p3.jpg': [160, 120], 'p4.jpg': [140, 105] } as const;

async function photoFolder(names: Array<keyof typeof SIZES>): Promise<string> {
  const work = tempDir();
  const files: Record<string, Buffer> = {};
  for (const name of names) files[name] = await jpegPhoto(...SIZES[name]);
  writeTree(path.join(work, 'in'), files);
  return work;
}

// One file at a time, on the CPU: each file is one model run and there is no other (no GPU probe run), so a
// gate closed with close(n) holds exactly the (n+1)th file not skipped in the model.
const BATCH = ['remove', 'in', '-o', 'out', '--local', '--size', 'preview', '--concurrency', '1', '--json'];

/** The warm-key model: what is tested is the batch around the model's runs, which take it milliseconds. */
const MODEL_ENV = { RMBG_MODEL: warmKeyModel() };

const rerun = (work: string) => rmbg(BATCH, { cwd: work, env: MODEL_ENV });

/** The batch, its model runs obeying `gate` (closed before it starts), and a wait for words on its stderr. */
function gatedRun(work: string, gate: InferenceGate) {
  const child = rmbg([...BATCH, '--device', 'cpu'], {
    cwd: work,
    nodeArgs: gate.nodeArgs,
    env: { ...MODEL_ENV, ...gate.env },
  });
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const listener of listeners) listener();
  });
  /** Resolves once stderr shows `text` (the signal it answers is then handled, not merely sent). */
  const says = (text: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!stderr.includes(text)) return;
        listeners.delete(check);
        resolve();
      };
      listeners.add(check);
      check();
      void child.then(() => reject(new Error(`the batch ended before saying ${text}; stderr:\n${stderr}`)));
    });
  /** Resolves once a run waits at the gate; fails if the batch ends first (the gate did not hold it). */
  const held = () =>
    Promise.race([
      gate.held(),
      child.then((result) => {
        throw new Error(`the batch ended (exit ${result.exitCode}) before a run was held; stderr:\n${stderr}`);
      }),
    ]);
  return { child, says, held };
}

const FIRST_STOP = 'Ctrl-C again';

async function expectAllCutouts(work: string, names: Array<keyof typeof SIZES>): Promise<void> {
  for (const name of names) {
    const [width, height] = SIZES[name];
    await expectCutout(path.join(work, 'out', name.replace('.jpg', '.png')), width, height);
  }
  expect(listFiles(path.join(work, 'out'))).toEqual([JOURNAL, ...names.map((n) => n.replace('.jpg', '.png'))].sort());
}

/**
 * Starts a one-at-a-time batch whose second file waits in the model, checks that the first cut-out is on disk and
 * the second is not, then sends `signal`: another file is in flight on any machine.
 */
async function interruptWithSecondInModel(work: string, signal: NodeJS.Signals, gate: InferenceGate) {
  gate.close(1);
  const batch = gatedRun(work, gate);
  await batch.held();
  expect(existsSync(path.join(work, 'out/p1.png')), 'p1 is done when p2 is in the model').toBe(true);
  expect(existsSync(path.join(work, 'out/p2.png'))).toBe(false);
  batch.child.kill(signal);
  return batch;
}

describe('Ctrl-C during rmbg remove --local', () => {
  const names = ['p1.jpg', 'p2.jpg', 'p3.jpg'] as const;
  let work: string;
  let finished: string[];

  it('once: finishes the file in flight, starts no other, exits 130 with a resume hint, leaves only whole outputs', async () => {
    work = await photoFolder([...names]);
    const gate = inferenceGate();
    try {
      const batch = await interruptWithSecondInModel(work, 'SIGINT', gate);
      // p2 stays in the model until rmbg has taken the signal: it must then finish p2 and start nothing else.
      await batch.says(FIRST_STOP);
      gate.open();
      const stopped = await batch.child;
      expect(stopped.exitCode).toBe(130);
      expect(stopped.stderr).toMatch(/run the same command again to resume/);
      const lines = jsonLines(stopped.stdout);
      const summary = lines.pop()!;
      expect(summary).toMatchObject({
        summary: true,
        total: 3,
        done: 2,
        notStarted: 1,
        failed: 0,
        stoppedBy: 'interrupted',
      });
      finished = lines.filter((l) => l.status === 'done').map((l) => path.basename(l.input as string));
      expect(finished.sort()).toEqual(['p1.jpg', 'p2.jpg']);
      // Exactly the finished files are on disk, whole; no temp file, no lock.
      expect(listFiles(path.join(work, 'out'))).toEqual([JOURNAL, 'p1.png', 'p2.png']);
    } finally {
      gate.open();
      gate.remove();
    }
  });

  it('twice (on the re-run): cancels the file in flight without leaving any of it', async () => {
    expect(finished, 'needs the first Ctrl-C').toBeDefined();
    const gate = inferenceGate();
    try {
      // The re-run skips the finished files; the one remaining waits in the model until both Ctrl-Cs are taken.
      gate.close();
      const { child, says, held } = gatedRun(work, gate);
      await held();
      child.kill('SIGINT');
      // A second signal sent before the first is handled would merge with it: wait for the first's message.
      await says(FIRST_STOP);
      child.kill('SIGINT');
      // rmbg says nothing when it takes the second: the gate's hook does. Only then may the run end.
      await gate.sigintTaken(2);
      gate.open();
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
    } finally {
      gate.open();
      gate.remove();
    }
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
    const gate = inferenceGate();
    let killed: Awaited<ReturnType<typeof rerun>>;
    try {
      killed = await (await interruptWithSecondInModel(work, 'SIGKILL', gate)).child;
    } finally {
      gate.open();
      gate.remove();
    }
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
    const gate = inferenceGate();
    try {
      gate.close(1);
      const { child, says, held } = gatedRun(work, gate);
      // Read the first JSON line (p1's) while p2 waits in the model, then close our end of the pipe, as
      // `head -n 1` does.
      await Promise.all([new Promise<void>((resolve) => child.stdout!.once('data', () => resolve())), held()]);
      child.stdout!.destroy();
      // p2's line meets the closed pipe. p3 may start before rmbg hears of it: it waits in the model until rmbg
      // has stopped, so p4 never starts.
      gate.close(1);
      await says('stopping after the files in flight');
      gate.open();
      const stopped = await child;
      expect(stopped.stderr).not.toMatch(/EPIPE|Error/);
      expect(stopped.stderr).toMatch(/run the same command again to resume/);
      expect(stopped.exitCode).toBe(130);
      const written = listFiles(path.join(work, 'out')).filter((name) => name !== JOURNAL && name !== REVIEW_PAGE);
      expect(written.slice(0, 2)).toEqual(['p1.png', 'p2.png']);
      expect(written).not.toContain('p4.png');
    } finally {
      gate.open();
      gate.remove();
    }

    const resumed = await rerun(work);
    expect(resumed.exitCode).toBe(0);
    await expectAllCutouts(work, [...names]);
  });
});
