// `rmbg remove DIR --api-url URL --api-key KEY` against a real `rmbg serve` (2 credits per image): a whole
// folder charged exactly once per photo, --dry-run and --confirm-over sending nothing they should not, and a
// bad key stopping the batch at once and resumable once fixed. What is charged does not depend on the model:
// the server runs the quick model.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addPhotos, LONG, PRICE, removeRemote, useRemoteServer, type Shoot } from '../helpers/remove-remote-harness.js';
import { cutoutsIn, expectCompleteCutouts, jsonLines, outputName } from '../helpers/remove-remote-harness.js';
import { expectOneKeyPerImage, imageHashOf, keyOf, posts } from '../helpers/remove-remote-harness.js';

const suite = useRemoteServer('quick');

describe('a folder of 20 photos, then dry runs and --confirm-over on the same folder', () => {
  let shoot: Shoot;
  let key: string;

  it(
    'processes all 20, charging exactly 20 × the price, and writes 20 valid cutouts',
    async () => {
      shoot = await suite.shoot(20);
      key = await suite.server.account(100);
      const result = await removeRemote(shoot, suite.server.url, key);
      expect(result.exitCode, result.stderr).toBe(0);

      const { files, summary } = jsonLines(result.stdout);
      expect(summary).toMatchObject({
        total: 20,
        done: 20,
        skipped: 0,
        failed: 0,
        notStarted: 0,
        credits: 20 * PRICE,
        stoppedBy: null,
      });
      expect(files.map((file) => [file.status, file.credits, file.replayed])).toEqual(
        Array(20).fill(['done', PRICE, false]),
      );
      expect(await suite.server.total(key)).toBe(100 - 20 * PRICE);
      await expectCompleteCutouts(shoot);

      // The journal's last word on every photo is 'done', with the charge the server reported.
      const journal = readFileSync(join(shoot.output, '.rmbg-journal.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { input: string; state: string; credits?: number });
      const last = new Map(journal.map((record) => [record.input, record]));
      expect([...last.values()].map((record) => [record.state, record.credits])).toEqual(
        Array(20).fill(['done', PRICE]),
      );
    },
    LONG,
  );

  it(
    '--dry-run lists only the new photos with their credits, at the price last charged, and sends nothing',
    async () => {
      const added = await addPhotos(shoot, 2, 'card2');
      const proxy = await suite.faultServer();

      const human = await removeRemote(shoot, proxy.url, key, ['--dry-run']);
      expect(human.exitCode, human.stderr).toBe(0);
      expect(human.stdout.trim().split('\n')).toEqual([
        ...added.map((name) => `would send ${join(shoot.inputs, name)}`),
        `dry run: 2 of 22 images would be sent, ${2 * PRICE} credits (${PRICE} credit(s) per image, as last charged); nothing was sent`,
      ]);

      const machine = await removeRemote(shoot, proxy.url, key, ['--dry-run', '--json']);
      expect(machine.exitCode, machine.stderr).toBe(0);
      const lines = machine.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines).toEqual([
        ...added.map((name) => ({ input: join(shoot.inputs, name), action: 'send' })),
        {
          summary: true,
          dryRun: true,
          toSend: 2,
          skipped: 20,
          credits: 2 * PRICE,
          pricePerImage: PRICE,
          priceKnown: true,
        },
      ]);

      expect(proxy.requests).toEqual([]);
      expect(await suite.server.total(key)).toBe(100 - 20 * PRICE);
      expect(cutoutsIn(shoot)).toHaveLength(20);
    },
    LONG,
  );

  it(
    '--confirm-over below the estimate refuses without a terminal (exit 1, nothing sent); at the estimate it proceeds',
    async () => {
      const proxy = await suite.faultServer();
      const refused = await removeRemote(shoot, proxy.url, key, ['--confirm-over', String(2 * PRICE - 1)]);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain(
        `refusing: 2 images would cost about ${2 * PRICE} credits, over --confirm-over ${2 * PRICE - 1}, and there is no terminal to ask`,
      );
      expect(proxy.requests).toEqual([]);
      expect(await suite.server.total(key)).toBe(100 - 20 * PRICE);
      expect(cutoutsIn(shoot)).toHaveLength(20);

      const allowed = await removeRemote(shoot, proxy.url, key, ['--confirm-over', String(2 * PRICE)]);
      expect(allowed.exitCode, allowed.stderr).toBe(0);
      expect(jsonLines(allowed.stdout).summary).toMatchObject({
        total: 22,
        done: 2,
        skipped: 20,
        failed: 0,
        credits: 2 * PRICE,
      });
      // Only the two new photos travelled, once each.
      const sent = posts(proxy.requests);
      expect(sent).toHaveLength(2);
      const newHashes = shoot.names.filter((name) => name.startsWith('card2')).map((name) => shoot.hashes.get(name));
      expect(sent.map(imageHashOf).sort()).toEqual(newHashes.sort());
      expect(await suite.server.total(key)).toBe(100 - 22 * PRICE);
      await expectCompleteCutouts(shoot);
    },
    LONG,
  );
});

describe('a bad API key', () => {
  it(
    'stops the batch at the first 403 (exit 1, the reason on stderr, no retries), and a re-run with the right key finishes it',
    async () => {
      const shoot = await suite.shoot(6);
      const key = await suite.server.account(20);
      const proxy = await suite.faultServer();

      const started = Date.now();
      const bad = await removeRemote(shoot, proxy.url, 'rmbg_not-a-key-of-this-server', ['--concurrency', '2']);
      const tookMs = Date.now() - started;
      expect(bad.exitCode).toBe(1);
      expect(bad.stderr).toContain('stopped: invalid_api_key (the X-API-Key is not a valid key of this service');
      const { files, summary } = jsonLines(bad.stdout);
      expect(summary).toMatchObject({ total: 6, done: 0, stoppedBy: 'invalid_api_key' });
      expect(summary!.notStarted).toBeGreaterThanOrEqual(4);
      expect(files.every((file) => file.status === 'failed' && file.error?.code === 'invalid_api_key')).toBe(true);
      // At most the two requests in flight, never one repeated: a 403 is final.
      const sent = posts(proxy.requests);
      expect(sent.length).toBeGreaterThanOrEqual(1);
      expect(sent.length).toBeLessThanOrEqual(2);
      expect(new Set(sent.map(keyOf)).size).toBe(sent.length);
      // No backoff was waited for (a retry would wait ≥ 0.5 s more per attempt; node start-up dominates this).
      expect(tookMs).toBeLessThan(20_000);
      expect(cutoutsIn(shoot)).toEqual([]);

      const good = await removeRemote(shoot, proxy.url, key, ['--concurrency', '2']);
      expect(good.exitCode, good.stderr).toBe(0);
      expect(jsonLines(good.stdout).summary).toMatchObject({
        total: 6,
        done: 6,
        failed: 0,
        skipped: 0,
        credits: 6 * PRICE,
      });
      expect(await suite.server.total(key)).toBe(20 - 6 * PRICE);
      expect(shoot.names.map(outputName)).toEqual(cutoutsIn(shoot));
      await expectCompleteCutouts(shoot);
      // The files the bad run tried went again under the same key (the server had not charged them).
      expectOneKeyPerImage(proxy.requests);
    },
    LONG,
  );
});
