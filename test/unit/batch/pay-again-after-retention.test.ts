// A key an earlier run sent without recording its result, once the server may have forgotten it: a server
// deletes a completed Idempotency-Key LIMITS.idempotencyKeyRetentionMs after it and then takes the same key
// as a new, charged request. So past the retention the batch does not send it again without --retry-failed,
// as when the server answers idempotency_key_expired; within it, the same key goes out (a replay, not a charge).

import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LIMITS } from '../../../src/api/limits.js';
import { canonicalOptions, DEFAULT_OPTIONS } from '../../../src/api/options.js';
import { JOURNAL_NAME, type JournalRecord } from '../../../src/batch/journal.js';
import { remoteRemover } from '../../../src/batch/remote-remover.js';
import type { FileEvent } from '../../../src/batch/batch-events.js';
import { runBatch } from '../../../src/batch/run-batch.js';
import { idempotencyKeyFor } from '../../../src/client/idempotency-key.js';
import { createFaultServer, imageResult, makePng, type FaultServer } from '../../helpers/fault-server.js';

const HOUR = 60 * 60 * 1000;
const options = { ...DEFAULT_OPTIONS, format: 'png' as const };

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(sentHoursAgo: number) {
  const dir = mkdtempSync(join(tmpdir(), 'rmbg-pay-again-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const png = await makePng(40, 40);
  const input = join(dir, 'in', 'photo.png');
  mkdirSync(join(dir, 'in'));
  writeFileSync(input, png);
  const output = join(dir, 'out');
  mkdirSync(output);
  const token = idempotencyKeyFor(png, options);
  const sentAt = new Date(Date.now() - sentHoursAgo * HOUR).toISOString();
  // What a run killed while waiting for the answer leaves: the key sent, no result.
  const killed: JournalRecord = {
    input,
    state: 'sent',
    contentHash: createHash('sha256').update(png).digest('hex'),
    options: canonicalOptions(options),
    token,
    sentAt,
    at: sentAt,
  };
  writeFileSync(join(output, JOURNAL_NAME), `${JSON.stringify(killed)}\n`);
  const server = await createFaultServer({ fallback: imageResult(png, 40, 40, { 'x-credits-charged': '1' }) });
  cleanups.push(() => server.close());
  return { input, output, token, sentAt, server };
}

async function run(output: string, input: string, server: FaultServer, retryFailed: boolean): Promise<FileEvent> {
  const events: FileEvent[] = [];
  await runBatch({
    items: [{ path: input, relativePath: 'photo.png' }],
    outputDir: output,
    options,
    remover: remoteRemover({ baseUrl: server.url, apiKey: 'rmbg_test', timeoutMs: 5000 }),
    concurrency: 1,
    overwrite: false,
    retryFailed,
    onEvent: (event) => event.type === 'file' && events.push(event),
  });
  return events[0] as FileEvent;
}

function lastRecord(output: string): JournalRecord {
  return JSON.parse(
    readFileSync(join(output, JOURNAL_NAME), 'utf8').trim().split('\n').pop() as string,
  ) as JournalRecord;
}

describe('an unfinished key older than the server keeps keys', () => {
  it('is not sent again (it would be charged again silently) until --retry-failed, like a key the server says expired', async () => {
    const { input, output, token, sentAt, server } = await setUp(LIMITS.idempotencyKeyRetentionMs / HOUR + 1);
    const refused = await run(output, input, server, false);
    expect(refused).toMatchObject({ status: 'failed', error: { code: 'idempotency_key_expired' } });
    expect(refused.error?.message).toContain('run again with --retry-failed to pay for it again');
    expect(server.requests).toHaveLength(0);
    // The journal keeps the key and when it was first sent, so the next run knows it too.
    expect(lastRecord(output)).toMatchObject({ state: 'failed', token, sentAt });

    expect(await run(output, input, server, false)).toMatchObject({ status: 'skipped' });
    expect(server.requests).toHaveLength(0);

    expect(await run(output, input, server, true)).toMatchObject({ status: 'done', credits: 1 });
    expect(server.requests).toHaveLength(1);
  });

  it('within the retention the same key goes out (the server replays it), still dated by its first sending', async () => {
    const { input, output, token, sentAt, server } = await setUp(2);
    expect(await run(output, input, server, false)).toMatchObject({ status: 'done' });
    expect(server.requests.map((request) => request.headers['idempotency-key'])).toEqual([token]);
    expect(lastRecord(output)).toMatchObject({ state: 'done', token, sentAt });
  });
});
