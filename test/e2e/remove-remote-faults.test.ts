// `rmbg remove` through a fault-injecting proxy in front of a real `rmbg serve`: 429/503 with Retry-After,
// 500s, a proxy's 502 page, dropped connections (before and after the server did the work) and delays; a
// 402 mid-batch; and a key the server no longer replays. Each photo is charged once, by the balance. The
// server runs the quick model, except where a photo must still be in progress when its retry arrives.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inferenceGate } from '../helpers/inference-gate.js';
import { apiError, drop, hang, proxy, respond, type FaultStep, type RecordedRequest } from '../helpers/fault-server.js';
import {
  cutoutsIn,
  expectCompleteCutouts,
  expectOneKeyPerImage,
  forwardTo,
  imageHashOf,
  jsonLines,
  keyOf,
  LONG,
  outputName,
  posts,
  PRICE,
  relayed,
  relayStep,
  removeRemote,
  useRemoteServer,
  waitFor,
  type Relayed,
} from '../helpers/remove-remote-harness.js';

/** One scripted fault, applied to one request; `retryAfter` in seconds when the answer carries Retry-After. */
interface Fault {
  name: string;
  step: (request: RecordedRequest) => FaultStep;
  retryAfter?: number;
  /** The request still gets through (only late): no retry follows. */
  passes?: boolean;
}

const fault = {
  rateLimited: (seconds: number): Fault => ({
    name: `429 Retry-After ${seconds}`,
    retryAfter: seconds,
    step: () => apiError(429, 'rate_limited', 'Rate limit exceeded', { 'retry-after': String(seconds) }),
  }),
  busy: (seconds: number): Fault => ({
    name: `503 Retry-After ${seconds}`,
    retryAfter: seconds,
    step: () => apiError(503, 'service_busy', 'Service busy', { 'retry-after': String(seconds) }),
  }),
  internal: (): Fault => ({ name: '500', step: () => apiError(500, 'internal_error', 'Internal error') }),
  badGateway: (): Fault => ({
    name: '502 HTML page of a proxy',
    step: () =>
      respond(502, {
        headers: { 'content-type': 'text/html' },
        body: '<html><body><h1>502 Bad Gateway</h1></body></html>',
      }),
  }),
  dropped: (): Fault => ({ name: 'dropped before the server saw it', step: () => drop() }),
  slow: (): Fault => ({ name: 'delayed 1.5 s', passes: true, step: () => proxy(1500) }),
};

describe('faults between rmbg and the server', () => {
  // The quick model: what is retried and charged does not depend on it (the real model's 409 is the next describe).
  const suite = useRemoteServer('quick');

  it(
    'retries 429/503 no sooner than Retry-After, 500s, drops and delays under one key per photo; all done, each charged once',
    async () => {
      const shoot = await suite.shoot(12);
      const key = await suite.server.account(100);
      const upstream = suite.server.url;
      const lostAnswers: string[] = [];

      // Faults per photo, in the order photos first reach the proxy; later requests of a photo go through.
      const plans: Fault[][] = [
        [fault.rateLimited(2)],
        [fault.busy(1)],
        [fault.internal()],
        [fault.dropped()],
        [
          {
            // The server processes and charges, then the connection dies before the answer arrives.
            name: 'answer lost after the server charged',
            step: () => async (request: RecordedRequest) => {
              await forwardTo(upstream, request);
              lostAnswers.push(keyOf(request) as string);
              return drop();
            },
          },
        ],
        [
          {
            // The connection dies while the server is still working: the retry meets 409 in progress, then the replay.
            name: 'answer lost while the server works',
            step: () => (request: RecordedRequest) => {
              void forwardTo(upstream, request).catch(() => undefined);
              lostAnswers.push(keyOf(request) as string);
              return drop(50);
            },
          },
        ],
        [fault.slow()],
        [fault.badGateway()],
        [fault.rateLimited(1), fault.busy(2)],
        [fault.internal(), fault.dropped()],
      ];
      const planOf = new Map<string, Fault[]>();
      const applied: Array<{ key: string; fault: Fault; request: RecordedRequest }> = [];
      const faults = await suite.faultServer((request) => {
        const requestKey = keyOf(request) ?? '';
        if (!planOf.has(requestKey)) planOf.set(requestKey, [...(plans[planOf.size] ?? [])]);
        const next = (planOf.get(requestKey) as Fault[]).shift();
        if (!next) return proxy();
        applied.push({ key: requestKey, fault: next, request });
        return next.step(request);
      });

      const result = await removeRemote(shoot, faults.url, key);
      expect(result.exitCode, result.stderr + result.stdout).toBe(0);
      expect(applied.map((a) => a.fault.name).sort()).toEqual(
        plans
          .flat()
          .map((f) => f.name)
          .sort(),
      );

      // Every photo done, each charged exactly once: the balance, and the summary agrees with it.
      const { files, summary } = jsonLines(result.stdout);
      expect(summary).toMatchObject({ total: 12, done: 12, failed: 0, credits: 12 * PRICE });
      expect(await suite.server.total(key)).toBe(100 - 12 * PRICE);
      await expectCompleteCutouts(shoot);

      // Each retry went out under the photo's one Idempotency-Key.
      const byImage = expectOneKeyPerImage(faults.requests);
      expect(byImage.size).toBe(12);
      const sent = posts(faults.requests);
      // One request per photo plus one per failing fault (a photo whose answer was lost may also have met 409 in progress).
      // Waits the server itself asked for, as many as it is slow (409: the first request is still running; 429: the
      // key's requests in progress are at their cap), are not counted against that.
      const failing = plans.flat().filter((f) => !f.passes).length;
      const waits = sent.filter((request) => request.upstreamStatus === 409 || request.upstreamStatus === 429);
      expect(sent.length).toBeGreaterThanOrEqual(12 + failing);
      expect(sent.length - waits.length).toBeLessThanOrEqual(12 + failing + 8);

      // After a Retry-After answer, the next attempt of that photo arrived no sooner than it said.
      for (const { key: faultedKey, fault: f, request } of applied.filter((a) => !a.fault.passes)) {
        const later = sent.filter((r) => keyOf(r) === faultedKey && r.arrivedAt > request.arrivedAt);
        expect(later.length, `a retry after ${f.name}`).toBeGreaterThanOrEqual(1);
        if (f.retryAfter !== undefined) {
          const waited = (later[0] as RecordedRequest).arrivedAt - request.arrivedAt;
          expect(waited, `ms waited after ${f.name}`).toBeGreaterThanOrEqual(f.retryAfter * 1000);
        }
      }

      // The photos whose answers were lost were charged by their first request and collected as replays.
      expect(lostAnswers).toHaveLength(2);
      const lostInputs = files.filter((file) => file.replayed).map((file) => file.input);
      const inputOfKey = new Map(
        sent.map((r) => [keyOf(r), shoot.names.find((name) => shoot.hashes.get(name) === imageHashOf(r))]),
      );
      expect(lostInputs.sort()).toEqual(lostAnswers.map((k) => join(shoot.inputs, inputOfKey.get(k) as string)).sort());
      expect(files.filter((file) => file.replayed).every((file) => file.credits === PRICE)).toBe(true);
    },
    LONG,
  );
});

describe('an answer lost while the model is still at work on it', () => {
  // The server's model runs wait for the test's word: the retry meets the first request still in the model on
  // any machine, and that run ends only once the retry has been answered 409.
  const gate = inferenceGate();
  const suite = useRemoteServer('quick', gate);
  afterAll(() => {
    gate.open();
    gate.remove();
  });

  it(
    'the retry meets 409 in progress, waits under the same key, and collects the one charge as a replay',
    async () => {
      const shoot = await suite.shoot(1);
      const key = await suite.server.account(10);
      const upstream = suite.server.url;
      let lost: string | undefined;
      gate.close();
      const faults = await suite.faultServer(async (request) => {
        if (lost === undefined) {
          // The server gets the request and works on it; the connection dies before the answer.
          lost = keyOf(request);
          void forwardTo(upstream, request).catch(() => undefined);
          return drop(50);
        }
        const answer = await forwardTo(upstream, request);
        request.upstreamStatus = answer.status;
        if (answer.status === 409) gate.open(); // the retry met the first request in the model: let it end
        return relayed(answer);
      });

      const result = await removeRemote(shoot, faults.url, key);
      expect(result.exitCode, result.stderr + result.stdout).toBe(0);
      const { files, summary } = jsonLines(result.stdout);
      expect(summary).toMatchObject({ total: 1, done: 1, failed: 0, credits: PRICE });
      // Charged by the first request in this run, collected by the retry: a replay, and the summary counts it.
      expect(files[0]).toMatchObject({ status: 'done', replayed: true, credits: PRICE });
      const retries = posts(faults.requests).slice(1);
      expect(retries.map(keyOf).every((sentKey) => sentKey === lost)).toBe(true);
      expect(retries.some((request) => request.upstreamStatus === 409)).toBe(true);
      expect(await suite.server.total(key)).toBe(10 - PRICE);
      await expectCompleteCutouts(shoot);
    },
    LONG,
  );
});

// What the server charges and replays, and what the journal records: the model's time plays no part, so
// the server runs a quick user model (see ServerModel).
describe('charges, keys and the journal', () => {
  const suite = useRemoteServer('quick');

  describe('402 mid-batch', () => {
    it(
      'stops with exit 1 and the balance, sends nothing new after the 402, and after `rmbg credits add` the re-run completes: one charge per photo',
      async () => {
        const shoot = await suite.shoot(10);
        const key = await suite.server.account(3 * PRICE);
        const relayed: Relayed[] = [];
        const recording = await suite.faultServer(relayStep(suite.server.url, relayed));

        const first = await removeRemote(shoot, recording.url, key, ['--concurrency', '2']);
        expect(first.exitCode).toBe(1);
        expect(first.stderr).toMatch(
          /stopped: the account is out of credits \(an image costs 2 credits and the balance is 0 .*\)\. The account has 0 credits left\. Add credits and run the same command again to resume/,
        );
        const { files, summary } = jsonLines(first.stdout);
        expect(summary).toMatchObject({ total: 10, done: 3, stoppedBy: 'insufficient_credits' });
        expect(
          files.filter((file) => file.status === 'failed').every((file) => file.error?.code === 'insufficient_credits'),
        ).toBe(true);
        expect(await suite.server.total(key)).toBe(0);

        // Nothing new went out once the 402 was answered: at most the other request in flight (concurrency 2).
        const firstRefusal = relayed.find((r) => r.status === 402) as Relayed;
        expect(firstRefusal).toBeDefined();
        const sentAfter = posts(recording.requests).filter((r) => r.arrivedAt > firstRefusal.answeredAt);
        expect(sentAfter.length).toBeLessThanOrEqual(1);
        expect(posts(recording.requests).length).toBeLessThanOrEqual(3 + 2);
        expect(summary!.notStarted).toBeGreaterThanOrEqual(10 - 5);
        // A 402 is final: no photo was sent twice.
        expect(new Set(posts(recording.requests).map(keyOf)).size).toBe(posts(recording.requests).length);

        await suite.server.addCredits(key, 20);
        const second = await removeRemote(shoot, recording.url, key, ['--concurrency', '2']);
        expect(second.exitCode, second.stderr).toBe(0);
        expect(jsonLines(second.stdout).summary).toMatchObject({
          total: 10,
          done: 7,
          skipped: 3,
          failed: 0,
          credits: 7 * PRICE,
        });
        expect(await suite.server.total(key)).toBe(20 - 7 * PRICE);
        await expectCompleteCutouts(shoot);
        // The photos refused with 402 went again under the same key (the server had not charged them).
        expectOneKeyPerImage(recording.requests);
      },
      LONG,
    );
  });

  describe('a key the server no longer replays (409 idempotency_key_expired)', () => {
    it(
      'is not paid for again silently: the photo fails with the reason until --retry-failed, which sends it under a new key',
      async () => {
        const shoot = await suite.shoot(3);
        const key = await suite.server.account(20);

        // Run 1: every request hangs (the server never sees them), and the CLI is killed: the journal says 'sent'.
        const hanging = await suite.faultServer(hang());
        const killedRun = removeRemote(shoot, hanging.url, key);
        await waitFor(() => posts(hanging.requests).length === 3, LONG - 120_000, '3 requests');
        killedRun.kill('SIGKILL');
        await killedRun;
        const firstKeys = new Map(posts(hanging.requests).map((r) => [imageHashOf(r), keyOf(r) as string]));
        const victim = shoot.names[0] as string;
        const victimKey = firstKeys.get(shoot.hashes.get(victim) as string) as string;

        // Later runs: the server answers that photo's old key as expired (it "charged it 10+ minutes ago").
        const expiring = await suite.faultServer((request) =>
          keyOf(request) === victimKey ? apiError(409, 'idempotency_key_expired', 'Idempotency-Key expired') : proxy(),
        );
        const second = await removeRemote(shoot, expiring.url, key);
        expect(second.exitCode).toBe(1);
        const victimLine = jsonLines(second.stdout).files.find((file) => file.input === join(shoot.inputs, victim));
        expect(victimLine).toMatchObject({ status: 'failed', error: { code: 'idempotency_key_expired' } });
        expect(victimLine!.error!.message).toContain('run again with --retry-failed to pay for it again');
        expect(posts(expiring.requests).filter((r) => imageHashOf(r) === shoot.hashes.get(victim))).toHaveLength(1);
        expect(await suite.server.total(key)).toBe(20 - 2 * PRICE);

        const third = await removeRemote(shoot, expiring.url, key);
        expect(third.exitCode).toBe(1);
        expect(jsonLines(third.stdout).summary).toMatchObject({ done: 0, skipped: 3, failed: 0 });
        expect(jsonLines(third.stdout).files.find((file) => file.input === join(shoot.inputs, victim))).toMatchObject({
          status: 'skipped',
          reason: 'failed-before',
        });
        expect(posts(expiring.requests)).toHaveLength(3);

        const fourth = await removeRemote(shoot, expiring.url, key, ['--retry-failed']);
        expect(fourth.exitCode, fourth.stderr).toBe(0);
        const victimSends = posts(expiring.requests).filter((r) => imageHashOf(r) === shoot.hashes.get(victim));
        expect(victimSends.map(keyOf)).toEqual([victimKey, victimKey, expect.not.stringMatching(victimKey)]);
        expect(await suite.server.total(key)).toBe(20 - 3 * PRICE);
        expect(cutoutsIn(shoot)).toEqual(shoot.names.map(outputName));
        await expectCompleteCutouts(shoot);
      },
      LONG,
    );
  });

  describe("a photo whose run was killed after its output was in place but before its 'done' line (issue 14)", () => {
    it(
      'a re-run records it done, and --overwrite past the replay window redoes it like the others instead of failing it',
      async () => {
        const shoot = await suite.shoot(3);
        const key = await suite.server.account(30);
        const first = await removeRemote(shoot, suite.server.url, key);
        expect(first.exitCode, first.stderr).toBe(0);
        // What the kill leaves (the timing cannot be forced): the output renamed into place, the journal's last word 'sent'.
        const journalPath = join(shoot.output, '.rmbg-journal.jsonl');
        const victim = join(shoot.inputs, shoot.names[0] as string);
        const lines = readFileSync(journalPath, 'utf8').trim().split('\n');
        const victimDone = lines.findIndex(
          (line) =>
            (JSON.parse(line) as { input: string; state: string }).input === victim && line.includes('"state":"done"'),
        );
        const killed = `${lines.filter((_, i) => i !== victimDone).join('\n')}\n`;
        const victimKey = (JSON.parse(lines[victimDone] as string) as { token: string }).token;
        const lastStateOfVictim = () =>
          readFileSync(journalPath, 'utf8')
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as { input: string; state: string })
            .filter((r) => r.input === victim)
            .pop()?.state;

        // Past the replay window the server answers the old keys as expired.
        const expiring = await suite.faultServer((request) =>
          keyOf(request) === victimKey ? apiError(409, 'idempotency_key_expired', 'Idempotency-Key expired') : proxy(),
        );
        // A plain re-run skips the photo (its output exists) and settles the record.
        writeFileSync(journalPath, killed);
        const rerun = await removeRemote(shoot, expiring.url, key);
        expect(rerun.exitCode, rerun.stderr).toBe(0);
        expect(jsonLines(rerun.stdout).summary).toMatchObject({ total: 3, skipped: 3, failed: 0 });
        expect(lastStateOfVictim()).toBe('done');

        // --overwrite straight after the kill: the finished photo is redone under a fresh key, like the others.
        writeFileSync(journalPath, killed);
        const overwrite = await removeRemote(shoot, expiring.url, key, ['--overwrite']);
        expect(overwrite.exitCode, overwrite.stdout + overwrite.stderr).toBe(0);
        expect(jsonLines(overwrite.stdout).summary).toMatchObject({ total: 3, done: 3, failed: 0 });
        expect(lastStateOfVictim()).toBe('done');
        await expectCompleteCutouts(shoot);
      },
      LONG,
    );
  });

  describe('a key the server is still working on (409 idempotency_in_progress)', () => {
    it(
      'keeps asking under the same key past the client retries until the result comes, instead of failing the photo',
      async () => {
        const shoot = await suite.shoot(2);
        const key = await suite.server.account(20);
        // Seven answers "in progress" (more than the client's 5 attempts of one call), as for a long job a killed run left.
        // Each says Retry-After 0: how long the client waits between them is the retry policy's unit tests' concern.
        let busyAnswers = 0;
        let slowKey: string | undefined;
        const faults = await suite.faultServer((request) => {
          slowKey ??= keyOf(request);
          if (keyOf(request) === slowKey && busyAnswers < 7) {
            busyAnswers += 1;
            return apiError(409, 'idempotency_in_progress', 'A request with this Idempotency-Key is in progress', {
              'retry-after': '0',
            });
          }
          return proxy();
        });

        const result = await removeRemote(shoot, faults.url, key);
        expect(result.exitCode, result.stderr + result.stdout).toBe(0);
        expect(jsonLines(result.stdout).summary).toMatchObject({ total: 2, done: 2, failed: 0 });
        const slowSends = posts(faults.requests).filter((r) => keyOf(r) === slowKey);
        expect(slowSends).toHaveLength(8);
        expectOneKeyPerImage(faults.requests);
        expect(await suite.server.total(key)).toBe(20 - 2 * PRICE);
        await expectCompleteCutouts(shoot);
      },
      LONG,
    );
  });
});
