// Stopping `rmbg remove` mid-batch against a real `rmbg serve` and running the same command again: SIGKILL,
// Ctrl-C (finish the files in flight) and Ctrl-C twice (cancel them). The re-run finishes the job, leaves
// no broken file, and the balance says each photo was charged exactly once. The server runs the quick model
// behind a network that holds its answers until the test lets them go (answerGate): the server has done the
// work of a request in flight, as a slow model's would be by the time the re-run asks, and the signals find
// requests in flight on any machine.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FaultServer } from '../helpers/fault-server.js';
import { LONG, PRICE, removeRemote, useRemoteServer, waitFor, type Shoot } from '../helpers/remove-remote-harness.js';
import { cutoutsIn, expectCompleteCutouts, jsonLines, outputName } from '../helpers/remove-remote-harness.js';
import { expectOneKeyPerImage, imageHashOf, keyOf, posts } from '../helpers/remove-remote-harness.js';
import { answerGate, type AnswerGate } from '../helpers/remove-remote-harness.js';

const suite = useRemoteServer('quick');
async function setUp(
  count: number,
  credits: number,
): Promise<{ shoot: Shoot; key: string; proxy: FaultServer; answers: AnswerGate }> {
  const shoot = await suite.shoot(count);
  const answers = answerGate(suite.server.url);
  const proxy = await suite.faultServer(answers.step);
  return { shoot, key: await suite.server.account(credits), proxy, answers };
}

/** Resolves once an answer is held; fails at once if rmbg ends first (the gate let everything through). */
async function answerHeld(answers: AnswerGate, child: ReturnType<typeof removeRemote>): Promise<void> {
  const ended = child.then((result) => {
    throw new Error(`rmbg ended (exit ${result.exitCode}) before an answer was held`);
  });
  ended.catch(() => undefined);
  await Promise.race([answers.holding(1), ended]);
}

/** Everything the child has written to stderr so far. */
function stderrOf(child: ReturnType<typeof removeRemote>): () => string {
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return () => stderr;
}

interface JournalLine {
  input: string;
  state: string;
  /** The remote remover's token: the Idempotency-Key that went out. */
  token?: string;
}

function journalOf(shoot: Shoot): Map<string, JournalLine> {
  const lines = readFileSync(join(shoot.output, '.rmbg-journal.jsonl'), 'utf8').split('\n');
  const last = new Map<string, JournalLine>();
  for (const line of lines) {
    try {
      const record = JSON.parse(line) as JournalLine;
      last.set(record.input, record);
    } catch {
      // a torn last line
    }
  }
  return last;
}

/** Photos whose request reached the server but whose cutout was never written: the server has (or will have) charged them. */
function inFlight(shoot: Shoot, proxy: FaultServer): string[] {
  const reached = new Set(posts(proxy.requests).map(imageHashOf));
  const written = new Set(cutoutsIn(shoot));
  return shoot.names.filter((name) => reached.has(shoot.hashes.get(name) as string) && !written.has(outputName(name)));
}

describe('SIGKILL mid-batch', () => {
  it(
    're-running finishes all 20, resending the killed requests under their keys (replayed free): exactly 20 × the price',
    async () => {
      const { shoot, key, proxy, answers } = await setUp(20, 100);
      // Five answers go back; the next are held, so the kill finds requests in flight.
      answers.pass(5);
      const first = removeRemote(shoot, proxy.url, key);
      await answerHeld(answers, first);
      await waitFor(() => cutoutsIn(shoot).length >= 5, LONG - 120_000, '5 cutouts');
      first.kill('SIGKILL');
      const killed = await first;
      expect(killed.signal).toBe('SIGKILL');
      answers.open();

      const writtenBefore = cutoutsIn(shoot);
      expect(writtenBefore).toHaveLength(5);
      const pending = inFlight(shoot, proxy);
      expect(pending.length, 'requests in flight at the kill').toBeGreaterThanOrEqual(1);
      // The journal says why they must not be paid for again: 'sent', with the key that went out.
      const journal = journalOf(shoot);
      const sentKeys = new Map(posts(proxy.requests).map((request) => [imageHashOf(request), keyOf(request)]));
      for (const name of pending) {
        expect(journal.get(join(shoot.inputs, name))).toMatchObject({
          state: 'sent',
          token: sentKeys.get(shoot.hashes.get(name) as string),
        });
      }

      // The server finishes the killed run's requests (and keeps their results) whether or not anyone waits; until
      // then they hold the key's cap of requests in progress, which a slow machine can make outlast the client's retries.
      await waitFor(
        () => posts(proxy.requests).every((request) => request.upstreamStatus !== undefined),
        LONG,
        "the killed run's requests to finish on the server",
      );
      const again = await removeRemote(shoot, proxy.url, key);
      expect(again.exitCode, again.stderr).toBe(0);
      const { files, summary } = jsonLines(again.stdout);
      expect(summary).toMatchObject({
        total: 20,
        done: 20 - writtenBefore.length,
        skipped: writtenBefore.length,
        failed: 0,
      });
      const replayed = files.filter((file) => file.replayed).map((file) => file.input);
      // Every request the killed run had in flight came back as the server's replay, not a new charge.
      expect(replayed.sort()).toEqual(pending.map((name) => join(shoot.inputs, name)).sort());
      expect(files.filter((file) => file.replayed).every((file) => file.credits === 0)).toBe(true);

      expect(await suite.server.total(key)).toBe(100 - 20 * PRICE);
      await expectCompleteCutouts(shoot);
      expectOneKeyPerImage(proxy.requests);
    },
    LONG,
  );
});

describe('Ctrl-C mid-batch', () => {
  it(
    'once: finishes the files in flight, exits 130 with a resume hint; the re-run completes, each photo charged once',
    async () => {
      const { shoot, key, proxy, answers } = await setUp(6, 50);
      // Two answers go back; the next are held until the Ctrl-C is taken, so it finds files in flight.
      answers.pass(2);
      const first = removeRemote(shoot, proxy.url, key, ['--concurrency', '2']);
      const stderr = stderrOf(first);
      await answerHeld(answers, first);
      await waitFor(() => cutoutsIn(shoot).length >= 2, LONG - 120_000, '2 cutouts');
      first.kill('SIGINT');
      await waitFor(() => stderr().includes('stopping after the files in flight'), LONG, 'the Ctrl-C to be taken');
      answers.open();
      const stopped = await first;
      expect(stopped.exitCode).toBe(130);
      expect(stopped.stderr).toContain('stopping after the files in flight');
      expect(stopped.stderr).toContain('interrupted: run the same command again to resume');
      const { summary } = jsonLines(stopped.stdout);
      expect(summary).toMatchObject({ total: 6, failed: 0, stoppedBy: 'interrupted' });
      expect(summary!.notStarted).toBeGreaterThanOrEqual(1);
      // Files in flight were finished, not abandoned: everything sent has its cutout.
      expect(inFlight(shoot, proxy)).toEqual([]);
      expect(cutoutsIn(shoot)).toHaveLength(summary!.done);
      expect(await suite.server.total(key)).toBe(50 - summary!.done * PRICE);

      const again = await removeRemote(shoot, proxy.url, key, ['--concurrency', '2']);
      expect(again.exitCode, again.stderr).toBe(0);
      expect(jsonLines(again.stdout).summary).toMatchObject({
        total: 6,
        done: 6 - summary!.done,
        skipped: summary!.done,
        failed: 0,
      });
      expect(await suite.server.total(key)).toBe(50 - 6 * PRICE);
      await expectCompleteCutouts(shoot);
      expectOneKeyPerImage(proxy.requests);
      expect(posts(proxy.requests)).toHaveLength(6);
    },
    LONG,
  );

  it(
    'twice: cancels the files in flight (exit 130); the re-run collects them from the server without a new charge',
    async () => {
      const { shoot, key, proxy, answers } = await setUp(6, 50);
      // One answer goes back; the next are held until rmbg has exited, so both Ctrl-Cs find files in flight.
      answers.pass(1);
      const first = removeRemote(shoot, proxy.url, key, ['--concurrency', '2']);
      const stderr = stderrOf(first);
      await answerHeld(answers, first);
      await waitFor(
        () => cutoutsIn(shoot).length >= 1 && inFlight(shoot, proxy).length >= 1,
        LONG - 120_000,
        'a cutout and a request in flight',
      );
      first.kill('SIGINT');
      await waitFor(
        () => stderr().includes('stopping after the files in flight'),
        LONG - 120_000,
        'the first Ctrl-C to be taken',
      );
      first.kill('SIGINT');
      const cancelled = await first;
      answers.open();
      expect(cancelled.exitCode).toBe(130);
      expect(cancelled.stderr).toContain('interrupted: run the same command again to resume');
      const { files } = jsonLines(cancelled.stdout);
      // Cancelled files whose request had reached the server: it finishes them anyway (they carry a key).
      const reached = new Set(posts(proxy.requests).map(imageHashOf));
      const interrupted = files
        .filter((file) => file.error?.code === 'interrupted')
        .map((file) => file.input)
        .filter((input) => reached.has(shoot.hashes.get(input.split('/').pop() as string) as string));
      expect(interrupted.length, 'files cancelled in flight').toBeGreaterThanOrEqual(1);
      const written = new Set(cutoutsIn(shoot));
      expect(interrupted.filter((input) => written.has(outputName(input.split('/').pop() as string)))).toEqual([]);

      const again = await removeRemote(shoot, proxy.url, key, ['--concurrency', '2']);
      expect(again.exitCode, again.stderr).toBe(0);
      const rerun = jsonLines(again.stdout);
      // The cancelled requests had reached the server, which finished and charged them: the re-run gets replays.
      const replayed = rerun.files.filter((file) => file.replayed);
      expect(replayed.map((file) => file.input).sort()).toEqual(interrupted.sort());
      expect(replayed.every((file) => file.credits === 0)).toBe(true);
      expect(await suite.server.total(key)).toBe(50 - 6 * PRICE);
      await expectCompleteCutouts(shoot);
      expectOneKeyPerImage(proxy.requests);
    },
    LONG,
  );
});
