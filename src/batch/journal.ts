// The resumable journal: JSON lines appended and fsynced, which survive a kill at any byte and a person can read.

import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { RmbgError } from '../api/errors.js';
import { acquirePidLock } from '../platform/pid-lock.js';

export const JOURNAL_NAME = '.rmbg-journal.jsonl';
const LOCK_NAME = '.rmbg-journal.lock';

export type JournalState = 'sent' | 'done' | 'failed';

export interface JournalRecord {
  /** Absolute input path. */
  input: string;
  state: JournalState;
  /** sha256 of the input bytes: a changed file is a new request. */
  contentHash: string;
  /** canonicalOptions() of the request. */
  options: string;
  /** What the remover gave for the request (for an API server, its Idempotency-Key); opaque to the batch. */
  token?: string;
  /** When the token was first sent (ISO 8601): a server forgets a key LIMITS.idempotencyKeyRetentionMs after. */
  sentAt?: string;
  output?: string;
  /** The mask file written beside the output (--mask), or as the output (--mask-only). */
  mask?: string;
  credits?: number;
  /** A done cutout's confidence (0..1, engine/output/mask-confidence.ts), when the remover gave one. */
  confidence?: number;
  error?: { code: string; message: string; retryable: boolean };
  at: string;
}

export class Journal {
  private readonly records = new Map<string, JournalRecord>();
  private writes: Promise<void> = Promise.resolve();

  private constructor(
    readonly path: string,
    private readonly releaseLock: () => void,
    private readonly handle: FileHandle,
  ) {}

  static async open(outputDir: string): Promise<Journal> {
    await mkdir(outputDir, { recursive: true }).catch((error: NodeJS.ErrnoException) => {
      const reason = error.code === 'EEXIST' || error.code === 'ENOTDIR' ? 'a file is in the way' : error.message;
      throw new RmbgError('io_error', `cannot use ${outputDir} as the output folder (${reason}); choose another -o`, {
        cause: error,
      });
    });
    const releaseLock = acquirePidLock(
      join(outputDir, LOCK_NAME),
      (holder) => `another rmbg run (${holder}) is writing to this output folder; wait for it or use another -o`,
    );
    const path = join(outputDir, JOURNAL_NAME);
    const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
    const journal = new Journal(path, releaseLock, await open(path, 'a'));
    journal.load(text);
    // A line torn by a kill has no newline: start on a fresh line, or the next record would be glued to it and lost.
    if (text && !text.endsWith('\n')) await journal.handle.write('\n');
    return journal;
  }

  /** The journal's records without locking or writing, for --dry-run. */
  static readRecords(outputDir: string): Map<string, JournalRecord> {
    const path = join(outputDir, JOURNAL_NAME);
    return existsSync(path) ? parseRecords(readFileSync(path, 'utf8')) : new Map();
  }

  private load(text: string): void {
    for (const [input, record] of parseRecords(text)) this.records.set(input, record);
  }

  latest(input: string): JournalRecord | undefined {
    return this.records.get(input);
  }

  /** Appends and fsyncs; resolves once the line is on disk. */
  append(record: Omit<JournalRecord, 'at'>): Promise<void> {
    const full: JournalRecord = { ...record, at: new Date().toISOString() };
    this.records.set(full.input, full);
    const line = `${JSON.stringify(full)}\n`;
    this.writes = this.writes.then(async () => {
      await this.handle.write(line);
      await this.handle.sync();
    });
    return this.writes;
  }

  async close(): Promise<void> {
    await this.writes.catch(() => undefined);
    await this.handle.close();
    this.releaseLock();
  }
}

function parseRecords(text: string): Map<string, JournalRecord> {
  const records = new Map<string, JournalRecord>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const record = JSON.parse(line) as JournalRecord & { idempotencyKey?: string };
      // Journals written before the token had the remote remover's key under its own name.
      if (record.token === undefined && record.idempotencyKey !== undefined) record.token = record.idempotencyKey;
      if (record.input && record.state) records.set(record.input, record);
    } catch {
      // A line torn by a kill mid-write: the state before it still stands.
    }
  }
  return records;
}
