// The batch runner without the CLI: runBatch over real files in a temp folder with a fake remover, checked by
// what it leaves on disk (outputs, the journal, no temp files, no lock) and the events it reports. The journal's
// contract is docs/resume.md: `sent` before the request, then `done` or `failed`; a re-run decides by its last word.

import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ErrorCode, RmbgError } from '../../../src/api/errors.js';
import { canonicalOptions, DEFAULT_OPTIONS, type RemoveOptions } from '../../../src/api/options.js';
import type { InputItem } from '../../../src/batch/discover-inputs.js';
import { JOURNAL_NAME, type JournalRecord } from '../../../src/batch/journal.js';
import type { RemoveCall, Remover } from '../../../src/batch/remover.js';
import type { BatchEvent, BatchSummary, FileEvent } from '../../../src/batch/batch-events.js';
import { type BatchOptions, runBatch } from '../../../src/batch/run-batch.js';

const OPTIONS: RemoveOptions = { ...DEFAULT_OPTIONS, format: 'png' };
const OPTIONS_KEY = canonicalOptions(OPTIONS);
const PRICE = 2;

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A folder `in/` with the named inputs (distinct bytes each) and an output folder `out/` not made yet. */
function folder(names: string[]) {
  const root = mkdtempSync(join(tmpdir(), 'rmbg-run-batch-'));
  made.push(root);
  const input = join(root, 'in');
  const out = join(root, 'out');
  const items: InputItem[] = names.map((name) => {
    const path = join(input, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `photo ${name}`);
    return { path, relativePath: name };
  });
  const item = (name: string) => items.find((i) => i.relativePath === name) as InputItem;
  return { root, out, items, item, outputOf: (name: string) => join(out, name.replace(/\.jpg$/, '.png')) };
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

interface Call {
  name: string;
  call: RemoveCall;
}

/**
 * A remover whose "cut-out" is `cut:` + the input's bytes, charging PRICE. Its token is the earlier one when the
 * batch hands one back (and payAgain is not set), else a new one; `act` runs after beforeSend, as the request
 * would, and may wait or throw.
 */
function fakeRemover(act: (name: string, call: RemoveCall) => unknown = () => undefined) {
  const calls: Call[] = [];
  let issued = 0;
  const remover: Remover = {
    mode: 'remote',
    async remove(image, _options, call) {
      const name = call.filename as string;
      calls.push({ name, call });
      const reuse = call.earlier !== undefined && !call.payAgain;
      const token = reuse ? (call.earlier?.token as string) : `token-${++issued}-${name}`;
      await call.beforeSend?.(token);
      await act(name, call);
      return {
        data: Buffer.concat([Buffer.from('cut:'), image]),
        format: 'png',
        width: 10,
        height: 5,
        creditsCharged: PRICE,
        replayed: reuse,
        token,
        foreground: undefined,
        confidence: undefined,
      };
    },
    close: async () => undefined,
  };
  return { remover, calls, names: () => calls.map((c) => c.name) };
}

const fail = (code: ErrorCode) => {
  throw new RmbgError(code, `the server said ${code}`);
};

async function run(
  items: InputItem[],
  out: string,
  remover: Remover,
  extra: Partial<BatchOptions> = {},
): Promise<{ events: BatchEvent[]; files: FileEvent[]; summary: BatchSummary; file: (name: string) => FileEvent }> {
  const events: BatchEvent[] = [];
  const { onEvent, ...rest } = extra;
  const summary = await runBatch({
    items,
    outputDir: out,
    options: OPTIONS,
    remover,
    concurrency: 1,
    overwrite: false,
    retryFailed: false,
    ...rest,
    onEvent: (event) => {
      events.push(event);
      onEvent?.(event);
    },
  });
  const files = events.filter((event): event is FileEvent => event.type === 'file');
  const file = (name: string) => files.find((event) => event.input.endsWith(`${sep}${name}`)) as FileEvent;
  return { events, files, summary, file };
}

/** Every line of the journal, parsed; a torn line is returned as the string it is. */
function journalLines(out: string): Array<JournalRecord | string> {
  return readFileSync(join(out, JOURNAL_NAME), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      try {
        return JSON.parse(line) as JournalRecord;
      } catch {
        return line;
      }
    });
}

/** The journal's records of one input, in order. */
const recordsOf = (out: string, input: string) =>
  journalLines(out).filter((r): r is JournalRecord => typeof r !== 'string' && r.input === input);

/** Every file under `out`, relative, sorted (hidden ones too). */
function filesIn(out: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else found.push(relative(out, join(dir, entry.name)).split(sep).join('/'));
    }
  };
  walk(out);
  return found.sort();
}

/** Resolves when released; for holding a file "in flight" until the test says so. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('a first run', () => {
  it('writes each output whole, journals `sent` before the request and `done` after it, and reports it', async () => {
    const { out, items, item, outputOf } = folder(['a.jpg', 'b.jpg', 'sub/c.jpg']);
    // What is on disk while the request is out: the journal already holds the token that went with it.
    const onDiskDuringRequest = new Map<string, JournalRecord | undefined>();
    const fake = fakeRemover((name) => {
      onDiskDuringRequest.set(name, recordsOf(out, item(name).path).at(-1));
    });
    const { events, files, summary } = await run(items, out, fake.remover);

    // The settings in force: the batch's own (this remover reports none).
    const settings = {
      outDir: out,
      recursive: false,
      watch: false,
      concurrency: 1,
      overwrite: false,
      retryFailed: false,
      reviewBelow: 0.5,
      reviewPage: false,
      retryReview: false,
      mask: false,
      maskOnly: false,
    };
    expect(events[0]).toEqual({ type: 'start', total: 3, settings });
    expect(events.at(-1)).toBe(summary);
    expect(summary).toMatchObject({
      type: 'summary',
      total: 3,
      done: 3,
      skipped: 0,
      failed: 0,
      failedBefore: 0,
      notStarted: 0,
      credits: 3 * PRICE,
      stoppedBy: null,
      failedInputs: [],
    });
    for (const name of ['a.jpg', 'b.jpg', 'sub/c.jpg']) {
      const { path } = item(name);
      expect(files.find((f) => f.input === path)).toMatchObject({
        status: 'done',
        output: outputOf(name),
        width: 10,
        height: 5,
        credits: PRICE,
        replayed: false,
        error: null,
      });
      expect(readFileSync(outputOf(name), 'utf8')).toBe(`cut:photo ${name}`);
      const [sent, done, ...more] = recordsOf(out, path);
      expect(more).toEqual([]);
      expect(sent).toMatchObject({
        state: 'sent',
        contentHash: sha256(`photo ${name}`),
        options: OPTIONS_KEY,
        token: expect.stringMatching(/^token-/),
      });
      expect(Date.parse(sent?.sentAt as string)).not.toBeNaN();
      expect(done).toMatchObject({ state: 'done', token: sent?.token, sentAt: sent?.sentAt, output: outputOf(name) });
      expect(done?.credits).toBe(PRICE);
      expect(onDiskDuringRequest.get(name)).toMatchObject({ state: 'sent', token: sent?.token });
    }
    // The outputs and the journal; no temp file, and the lock is released.
    expect(filesIn(out)).toEqual([JOURNAL_NAME, 'a.png', 'b.png', 'sub/c.png']);
  });

  it('removes temp files a killed run left, in subfolders too, and writes no output for a failed input', async () => {
    const { out, items, outputOf } = folder(['a.jpg', 'sub/c.jpg', 'bad.jpg']);
    mkdirSync(join(out, 'sub'), { recursive: true });
    writeFileSync(join(out, '.a.png.rmbg-partial-99999-0badf00d'), 'half a file');
    writeFileSync(join(out, 'sub', '.c.png.rmbg-partial-99999-0badf00d'), 'half a file');
    const { summary, file } = await run(
      items,
      out,
      fakeRemover((name) => name === 'bad.jpg' && fail('corrupt_image')).remover,
    );
    expect(summary).toMatchObject({ done: 2, failed: 1, failedInputs: [items[2]?.path] });
    expect(file('bad.jpg')).toMatchObject({
      status: 'failed',
      output: null,
      credits: 0,
      error: { code: 'corrupt_image', message: 'the server said corrupt_image' },
    });
    expect(existsSync(outputOf('bad.jpg'))).toBe(false);
    expect(filesIn(out)).toEqual([JOURNAL_NAME, 'a.png', 'sub/c.png']);
  });
});

describe('a re-run', () => {
  it('skips inputs whose output exists without sending them, redoes one deleted by hand, and redoes all with overwrite', async () => {
    const { out, items, item, outputOf } = folder(['a.jpg', 'b.jpg']);
    await run(items, out, fakeRemover().remover);
    const kept = statSync(outputOf('a.jpg')).mtimeMs;
    rmSync(outputOf('b.jpg'));

    const again = fakeRemover();
    const { summary, file } = await run(items, out, again.remover);
    expect(again.names()).toEqual(['b.jpg']);
    // Under its earlier token: the remover may have the server replay it, and a replay is no new charge.
    expect(summary).toMatchObject({ total: 2, done: 1, skipped: 1, failed: 0, credits: 0 });
    expect(again.calls[0]?.call.earlier).toMatchObject({ token: recordsOf(out, item('b.jpg').path)[0]?.token });
    expect(file('a.jpg')).toMatchObject({ status: 'skipped', reason: 'exists', output: outputOf('a.jpg'), credits: 0 });
    expect(statSync(outputOf('a.jpg')).mtimeMs).toBe(kept);
    expect(readFileSync(outputOf('b.jpg'), 'utf8')).toBe('cut:photo b.jpg');

    const overwrite = fakeRemover();
    const redone = await run(items, out, overwrite.remover, { overwrite: true });
    expect(overwrite.names()).toEqual(['a.jpg', 'b.jpg']);
    expect(redone.summary).toMatchObject({ done: 2, skipped: 0 });
    // A finished request is handed back as finished: the remover decides whether its token may be replayed.
    expect(overwrite.calls[0]?.call.earlier).toMatchObject({
      token: recordsOf(out, item('a.jpg').path)[0]?.token,
      finished: true,
    });
  });
});

describe('resume after an interrupted run', () => {
  /** What a run killed mid-request leaves: the journal's last word on the input is `sent`, with its token. */
  function killedMidRequest(out: string, input: string, bytes: string, sentAt: string): JournalRecord {
    const record: JournalRecord = {
      input,
      state: 'sent',
      contentHash: sha256(bytes),
      options: OPTIONS_KEY,
      token: 'token-of-the-killed-run',
      sentAt,
      at: sentAt,
    };
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, JOURNAL_NAME), `${JSON.stringify(record)}\n`);
    return record;
  }

  it('sends a `sent` input again under its token, dated by its first sending, and counts no new charge for the replay', async () => {
    const { out, items, item, outputOf } = folder(['a.jpg', 'b.jpg']);
    const sentAt = new Date(Date.now() - 60_000).toISOString();
    const killed = killedMidRequest(out, item('a.jpg').path, 'photo a.jpg', sentAt);

    const fake = fakeRemover();
    const { summary, file } = await run(items, out, fake.remover);
    expect(fake.calls.find((c) => c.name === 'a.jpg')?.call.earlier).toEqual({
      token: killed.token,
      finished: false,
      sentAt: Date.parse(sentAt),
    });
    expect(fake.calls.find((c) => c.name === 'b.jpg')?.call.earlier).toBeUndefined();
    // The server replayed what the killed run paid for: this run charged only b.
    expect(file('a.jpg')).toMatchObject({ status: 'done', replayed: true, credits: 0, output: outputOf('a.jpg') });
    expect(summary).toMatchObject({ done: 2, credits: PRICE });
    expect(recordsOf(out, item('a.jpg').path).map((r) => [r.state, r.token, r.sentAt])).toEqual([
      ['sent', killed.token, sentAt],
      ['sent', killed.token, sentAt],
      ['done', killed.token, sentAt],
    ]);
  });

  it('a changed photo is a new request: no earlier token goes with it', async () => {
    const { out, items, item } = folder(['a.jpg']);
    killedMidRequest(out, item('a.jpg').path, 'the photo before it was edited', new Date().toISOString());
    const fake = fakeRemover();
    await run(items, out, fake.remover);
    expect(fake.calls[0]?.call.earlier).toBeUndefined();
  });

  it('a `sent` input whose output is in place (killed between rename and `done`) is recorded done and skipped', async () => {
    const { out, items, item, outputOf } = folder(['a.jpg']);
    killedMidRequest(out, item('a.jpg').path, 'photo a.jpg', new Date().toISOString());
    writeFileSync(outputOf('a.jpg'), 'the output that was renamed into place');
    const fake = fakeRemover();
    const { file } = await run(items, out, fake.remover);
    expect(fake.calls).toEqual([]);
    expect(file('a.jpg')).toMatchObject({ status: 'skipped', reason: 'exists' });
    expect(recordsOf(out, item('a.jpg').path).at(-1)).toMatchObject({
      state: 'done',
      token: 'token-of-the-killed-run',
      output: outputOf('a.jpg'),
    });
  });

  it('a line torn by a kill is ignored, and the records after it start on a line of their own', async () => {
    const { out, items, item } = folder(['a.jpg', 'b.jpg']);
    await run([item('a.jpg')], out, fakeRemover().remover);
    writeFileSync(
      join(out, JOURNAL_NAME),
      `${readFileSync(join(out, JOURNAL_NAME), 'utf8')}{"input":"${item('b.jpg').path}","sta`,
    );

    const fake = fakeRemover();
    const { summary } = await run(items, out, fake.remover);
    expect(fake.names()).toEqual(['b.jpg']);
    expect(summary).toMatchObject({ done: 1, skipped: 1 });
    const lines = journalLines(out);
    const torn = lines.findIndex((line) => typeof line === 'string');
    expect(lines[torn]).toMatch(/"sta$/);
    expect(lines.slice(torn + 1).map((r) => (r as JournalRecord).state)).toEqual(['sent', 'done']);
  });

  it('a second run on the same output folder while one runs is refused, and the first is untouched', async () => {
    const { out, items } = folder(['a.jpg']);
    const held = gate();
    const started = gate();
    const first = run(
      items,
      out,
      fakeRemover(async () => {
        started.open();
        await held.opened;
      }).remover,
    );
    await started.opened;
    await expect(run(items, out, fakeRemover().remover)).rejects.toMatchObject({
      code: 'usage_error',
      message: expect.stringMatching(/another rmbg run \(pid \d+\) is writing to this output folder/),
    });
    held.open();
    expect((await first).summary).toMatchObject({ done: 1 });
  });
});

describe('an error that stops the batch (402, 403)', () => {
  it('starts nothing new, lets the file in flight finish, and leaves the rest for a re-run under the same token', async () => {
    const names = ['p0.jpg', 'p1.jpg', 'p2.jpg', 'p3.jpg', 'p4.jpg'];
    const { out, items, item } = folder(names);
    const p1Failed = gate();
    const fake = fakeRemover(async (name) => {
      if (name === 'p0.jpg') await p1Failed.opened; // in flight while p1 is refused
      if (name === 'p1.jpg') fail('insufficient_credits');
    });
    const first = await run(items, out, fake.remover, {
      concurrency: 2,
      onEvent: (event) => event.type === 'file' && event.status === 'failed' && p1Failed.open(),
    });
    expect(fake.names().sort()).toEqual(['p0.jpg', 'p1.jpg']);
    expect(first.summary).toMatchObject({
      total: 5,
      done: 1,
      failed: 1,
      notStarted: 3,
      credits: PRICE,
      stoppedBy: 'insufficient_credits',
      failedInputs: [item('p1.jpg').path],
    });
    expect(first.file('p0.jpg')).toMatchObject({ status: 'done' });
    expect(first.file('p1.jpg')).toMatchObject({ status: 'failed', error: { code: 'insufficient_credits' } });
    expect(first.files).toHaveLength(2);
    // Refused, not failed for good: the journal says a re-run should send it again.
    const refused = recordsOf(out, item('p1.jpg').path);
    expect(refused.map((r) => r.state)).toEqual(['sent', 'failed']);
    expect(refused[1]?.error).toEqual({
      code: 'insufficient_credits',
      message: 'the server said insufficient_credits',
      retryable: true,
    });
    expect(filesIn(out)).toEqual([JOURNAL_NAME, 'p0.png']);

    const again = fakeRemover();
    const second = await run(items, out, again.remover);
    expect(again.names()).toEqual(['p1.jpg', 'p2.jpg', 'p3.jpg', 'p4.jpg']);
    expect(again.calls[0]?.call.earlier).toMatchObject({ token: refused[0]?.token, finished: false });
    expect(second.summary).toMatchObject({ total: 5, done: 4, skipped: 1, failed: 0, stoppedBy: null });
  });

  it('an error that does not stop the batch (500) fails that file only, and the next run sends it again', async () => {
    const { out, items } = folder(['a.jpg', 'b.jpg', 'c.jpg']);
    const first = await run(items, out, fakeRemover((name) => name === 'a.jpg' && fail('internal_error')).remover);
    expect(first.summary).toMatchObject({ done: 2, failed: 1, notStarted: 0, stoppedBy: null });
    const again = fakeRemover();
    expect((await run(items, out, again.remover)).summary).toMatchObject({ done: 1, skipped: 2 });
    expect(again.names()).toEqual(['a.jpg']);
  });
});

describe('a failure a retry will not fix', () => {
  it('is skipped by later runs (failed-before, with its error) until retryFailed sends it again with payAgain', async () => {
    const { out, items, item, outputOf } = folder(['bad1.jpg', 'bad2.jpg', 'good.jpg']);
    // bad1 finishes after bad2: the summary still names the failures in input order.
    const bad2Failed = gate();
    const first = await run(
      items,
      out,
      fakeRemover(async (name) => {
        if (name === 'bad1.jpg') {
          await bad2Failed.opened;
          fail('corrupt_image');
        }
        if (name === 'bad2.jpg') fail('image_too_many_pixels');
      }).remover,
      { concurrency: 2, onEvent: (event) => event.type === 'file' && event.status === 'failed' && bad2Failed.open() },
    );
    expect(first.files.map((f) => f.input)).toEqual([
      item('bad2.jpg').path,
      item('bad1.jpg').path,
      item('good.jpg').path,
    ]);
    expect(first.summary.failedInputs).toEqual([item('bad1.jpg').path, item('bad2.jpg').path]);
    expect(recordsOf(out, item('bad1.jpg').path).at(-1)?.error).toMatchObject({
      code: 'corrupt_image',
      retryable: false,
    });

    const skipping = fakeRemover();
    const second = await run(items, out, skipping.remover);
    expect(skipping.calls).toEqual([]);
    expect(second.summary).toMatchObject({ total: 3, done: 0, skipped: 3, failedBefore: 2, failed: 0 });
    expect(second.file('bad1.jpg')).toMatchObject({
      status: 'skipped',
      reason: 'failed-before',
      output: null,
      error: { code: 'corrupt_image', message: 'the server said corrupt_image' },
    });
    expect(second.file('good.jpg')).toMatchObject({ status: 'skipped', reason: 'exists' });

    const retrying = fakeRemover((name) => name === 'bad2.jpg' && fail('image_too_many_pixels'));
    const third = await run(items, out, retrying.remover, { retryFailed: true });
    expect(retrying.names()).toEqual(['bad1.jpg', 'bad2.jpg']);
    expect(retrying.calls.every((c) => c.call.payAgain === true)).toBe(true);
    expect(third.summary).toMatchObject({ done: 1, skipped: 1, failedBefore: 0, failed: 1 });
    expect(readFileSync(outputOf('bad1.jpg'), 'utf8')).toBe('cut:photo bad1.jpg');
  });

  it('is sent again without retryFailed once the photo was replaced (new bytes, a new request)', async () => {
    const { out, items, item } = folder(['photo.jpg']);
    await run(items, out, fakeRemover(() => fail('corrupt_image')).remover);
    expect((await run(items, out, fakeRemover().remover)).file('photo.jpg')).toMatchObject({
      status: 'skipped',
      reason: 'failed-before',
    });
    writeFileSync(item('photo.jpg').path, 'the photo, exported again');
    const fake = fakeRemover();
    const { file } = await run(items, out, fake.remover);
    expect(file('photo.jpg')).toMatchObject({ status: 'done' });
    expect(fake.calls[0]?.call.earlier).toBeUndefined();
    expect(recordsOf(out, item('photo.jpg').path).at(-1)).toMatchObject({
      state: 'done',
      contentHash: sha256('the photo, exported again'),
    });
  });
});

describe('stopping (Ctrl-C)', () => {
  it('stop: the file in flight finishes and is written, none starts after it, stoppedBy interrupted', async () => {
    const { out, items } = folder(['p0.jpg', 'p1.jpg', 'p2.jpg']);
    const stop = new AbortController();
    const fake = fakeRemover((name) => name === 'p0.jpg' && stop.abort());
    const { summary, file } = await run(items, out, fake.remover, { stop: stop.signal });
    expect(fake.names()).toEqual(['p0.jpg']);
    expect(file('p0.jpg')).toMatchObject({ status: 'done' });
    expect(summary).toMatchObject({ total: 3, done: 1, failed: 0, notStarted: 2, stoppedBy: 'interrupted' });
    expect(filesIn(out)).toEqual([JOURNAL_NAME, 'p0.png']);
  });

  it('stop after the last file started still says interrupted', async () => {
    const { out, items } = folder(['p0.jpg']);
    const stop = new AbortController();
    const { summary } = await run(items, out, fakeRemover(() => stop.abort()).remover, { stop: stop.signal });
    expect(summary).toMatchObject({ done: 1, notStarted: 0, stoppedBy: 'interrupted' });
  });

  it('abort: the file in flight is cancelled (its signal aborts), leaves no output, and a re-run sends it under its token', async () => {
    const { out, items, item } = folder(['p0.jpg', 'p1.jpg']);
    const stop = new AbortController();
    const abort = new AbortController();
    const fake = fakeRemover(async (_name, call) => {
      stop.abort();
      abort.abort();
      expect(call.signal?.aborted).toBe(true);
      throw new RmbgError('interrupted', 'cancelled');
    });
    const { summary, file } = await run(items, out, fake.remover, { stop: stop.signal, abort: abort.signal });
    expect(file('p0.jpg')).toMatchObject({ status: 'failed', output: null, error: { code: 'interrupted' } });
    expect(summary).toMatchObject({ done: 0, failed: 1, notStarted: 1, stoppedBy: 'interrupted' });
    expect(filesIn(out)).toEqual([JOURNAL_NAME]);
    const cancelled = recordsOf(out, item('p0.jpg').path);
    expect(cancelled.at(-1)).toMatchObject({ state: 'failed', error: { code: 'interrupted', retryable: true } });

    const again = fakeRemover();
    expect((await run(items, out, again.remover)).summary).toMatchObject({ done: 2, failed: 0 });
    expect(again.calls[0]?.call.earlier?.token).toBe(cancelled[0]?.token);
  });
});

describe('retryReview', () => {
  it('is refused, before the journal is opened, by a remover that says it cannot retry, whichever kind it is', async () => {
    const { out, items } = folder(['a.jpg']);
    const { remover, calls } = fakeRemover();
    const refusing: Remover = { ...remover, mode: 'local', retryReviewRefusal: 'this remover cannot retry' };
    const refused = run(items, out, refusing, { retryReview: true });
    await expect(refused).rejects.toMatchObject({ code: 'usage_error', message: 'this remover cannot retry' });
    expect(calls).toEqual([]);
    expect(existsSync(out)).toBe(false);
  });

  it('runs with a remover that does not refuse, whichever kind it is', async () => {
    const { out, items } = folder(['a.jpg']);
    const { remover } = fakeRemover();
    expect(remover.mode).toBe('remote');
    const { summary, files } = await run(items, out, remover, { retryReview: true });
    // Nothing was flagged before: nothing to run again.
    expect(files.map((file) => file.reason)).toEqual(['not-flagged']);
    expect(summary).toMatchObject({ done: 0, skipped: 1 });
  });
});
