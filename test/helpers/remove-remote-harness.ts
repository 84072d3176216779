// Shared by the remove-remote-*.test.ts files: a real `rmbg serve` (2 credits per image) with one account
// per test, folders of distinct photos, the real `rmbg remove` CLI, and checks of what is left on disk.

import { createHash } from 'node:crypto';
import http from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, expect } from 'vitest';
import { jpegPhoto } from './hostile-images.js';
import { createFaultServer, respond, type FaultServer, type FaultStep, type RecordedRequest } from './fault-server.js';
import { rmbg } from './cli.js';
import type { InferenceGate } from './inference-gate.js';
import { addQuickModel, QUICK_MODEL } from './remove-local-files.js';
import { balance, createKey, ensureBuilt, startServe, tempDataDir, type ServeProcess } from './serve-harness.js';

export const PRICE = 2;

/**
 * Per test: the real model costs ~1–1.5 s per image on an idle 2-core machine, many times that on a busy
 * one; nothing here depends on speed, so the bounds are wide.
 */
export const LONG = 600_000;

export interface RemoteServer {
  serve: ServeProcess;
  url: string;
  dataDir: string;
  /** A fresh account (its own balance) with `credits`. */
  account(credits: number): Promise<string>;
  total(key: string): Promise<number>;
  addCredits(key: string, credits: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The server's model. 'built-in': the real isnet-medium (seconds per image on a busy machine). 'quick': the
 * quick model of remove-local-files.ts, for tests of what travels between client and server, where the model's
 * time only slows the run down.
 */
export type ServerModel = 'built-in' | 'quick';

/** `gate`: the server's model runs obey it (test/helpers/inference-gate.ts). */
export async function startRemoteServer(
  flags: string[] = [],
  model: ServerModel = 'built-in',
  gate?: InferenceGate,
): Promise<RemoteServer> {
  await ensureBuilt();
  const dataDir = tempDataDir();
  // The user model and its graph cache stay in the data directory.
  const env = { ...(model === 'quick' ? await addQuickModel(dataDir) : {}), ...gate?.env };
  const modelFlags = model === 'quick' ? QUICK_MODEL : [];
  const serve = await startServe(
    dataDir,
    ['--credits-per-image', String(PRICE), ...modelFlags, ...flags],
    env,
    gate?.nodeArgs,
  );
  return {
    serve,
    url: serve.url,
    dataDir,
    account: async (credits) => (await createKey(dataDir, credits)).key,
    total: async (key) => (await balance(serve.url, key)).total,
    async addCredits(key, credits) {
      const result = await rmbg(['credits', 'add', String(credits), '--key', key, '--data-dir', dataDir]);
      if (result.exitCode !== 0) throw new Error(`credits add failed: ${result.stderr}`);
    },
    async close() {
      await serve.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * One real server per test file (started before its tests, stopped after them), and the shoots and fault
 * servers its tests make, closed after the file in reverse order.
 */
export function useRemoteServer(model: ServerModel = 'built-in', gate?: InferenceGate) {
  const cleanups: Array<() => unknown> = [];
  let started: RemoteServer | undefined;
  beforeAll(async () => {
    started = await startRemoteServer([], model, gate);
  }, LONG);
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await started?.close();
  });
  const suite = {
    get server(): RemoteServer {
      if (!started) throw new Error('the remote server has not started');
      return started;
    },
    async shoot(count: number): Promise<Shoot> {
      const shoot = await makeShoot(count);
      cleanups.push(() => shoot.cleanup());
      return shoot;
    },
    /** A fault server in front of the real one: a plain proxy unless `fallback` scripts its answers. */
    async faultServer(fallback?: FaultStep): Promise<FaultServer> {
      const faults = await createFaultServer({ upstream: suite.server.url, ...(fallback ? { fallback } : {}) });
      cleanups.push(() => faults.close());
      return faults;
    },
  };
  return suite;
}

export interface Shoot {
  dir: string;
  inputs: string;
  output: string;
  /** File names of the photos, sorted. */
  names: string[];
  /** Input name → sha256 of its bytes. */
  hashes: Map<string, string>;
  configDir: string;
  cleanup(): void;
}

export const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** `count` JPEG photos of distinct sizes (so distinct bytes and keys), 160×120 and up: the model's cost is per image, not per pixel. */
export async function makeShoot(count: number, prefix = 'photo'): Promise<Shoot> {
  const dir = mkdtempSync(join(tmpdir(), 'rmbg-remote-e2e-'));
  const inputs = join(dir, 'shoot');
  const configDir = join(dir, 'config');
  mkdirSync(inputs);
  mkdirSync(configDir);
  const names: string[] = [];
  const hashes = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${String(i).padStart(2, '0')}.jpg`;
    const data = await jpegPhoto(160 + 2 * i, 120 + i);
    writeFileSync(join(inputs, name), data);
    names.push(name);
    hashes.set(name, sha256(data));
  }
  return {
    dir,
    inputs,
    output: join(dir, 'cutouts'),
    names,
    hashes,
    configDir,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Adds photos to an existing shoot (a photographer's second card). */
export async function addPhotos(shoot: Shoot, count: number, prefix: string): Promise<string[]> {
  const added: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${String(i).padStart(2, '0')}.jpg`;
    const data = await jpegPhoto(300 + 2 * i, 200 + i);
    writeFileSync(join(shoot.inputs, name), data);
    shoot.names.push(name);
    shoot.hashes.set(name, sha256(data));
    added.push(name);
  }
  shoot.names.sort();
  return added;
}

/** `rmbg remove SHOOT -o CUTOUTS --api-url URL --api-key KEY --size preview …` with no inherited RMBG_* settings; not awaited. */
export function removeRemote(
  shoot: Shoot,
  url: string,
  key: string,
  extra: string[] = [],
  options: { timeoutMs?: number } = {},
) {
  return rmbg(
    ['remove', shoot.inputs, '-o', shoot.output, '--api-url', url, '--api-key', key, '--size', 'preview', ...extra],
    { configDir: shoot.configDir, timeout: options.timeoutMs ?? LONG - 60_000 },
  );
}

export interface FileLine {
  input: string;
  output: string | null;
  status: 'done' | 'skipped' | 'failed';
  credits: number;
  replayed: boolean;
  reason?: string;
  error: { code: string; message: string } | null;
}

export interface SummaryLine {
  summary: true;
  total: number;
  done: number;
  skipped: number;
  failed: number;
  notStarted: number;
  credits: number;
  stoppedBy: string | null;
}

/** The JSON lines a non-TTY run prints on stdout: file lines, then a summary (absent when killed). */
export function jsonLines(stdout: string): { files: FileLine[]; summary: SummaryLine | undefined } {
  const lines = stdout
    .split('\n')
    .filter((line) => line.trim().startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as FileLine | SummaryLine];
      } catch {
        return []; // a line cut by SIGKILL
      }
    });
  return {
    files: lines.filter((line): line is FileLine => !('summary' in line)),
    summary: lines.find((line): line is SummaryLine => 'summary' in line),
  };
}

export const outputName = (input: string): string => input.replace(/\.jpg$/, '.png');

/** PNG cutouts present in the output folder (names only). */
export function cutoutsIn(shoot: Shoot): string[] {
  if (!existsSync(shoot.output)) return [];
  return readdirSync(shoot.output)
    .filter((name) => name.endsWith('.png'))
    .sort();
}

/**
 * The folder holds exactly one valid cutout per photo, the journal and review.html: no temp file, no lock, nothing
 * else.
 * Valid: a complete PNG of the input's size with alpha, the backdrop transparent and the disc opaque.
 */
export async function expectCompleteCutouts(shoot: Shoot): Promise<void> {
  const expected = shoot.names.map(outputName).sort();
  expect(readdirSync(shoot.output).sort()).toEqual(['.rmbg-journal.jsonl', 'review.html', ...expected].sort());
  for (const name of shoot.names) {
    const input = await sharp(join(shoot.inputs, name)).metadata();
    const { data, info } = await sharp(join(shoot.output, outputName(name)))
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect({ name, width: info.width, height: info.height, channels: info.channels }).toEqual({
      name,
      width: input.width,
      height: input.height,
      channels: 4,
    });
    const alpha = (x: number, y: number) => data[(y * info.width + x) * 4 + 3] as number;
    expect(alpha(1, 1), `${name}: corner alpha`).toBeLessThan(32);
    expect(alpha(Math.floor(info.width / 2), Math.floor(info.height / 2)), `${name}: centre alpha`).toBeGreaterThan(
      224,
    );
  }
}

/** Waits until `check` holds, polling; throws after `timeoutMs`. */
export async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

/** POSTs to /removebg in the fault server's log. */
export const posts = (requests: RecordedRequest[]): RecordedRequest[] =>
  requests.filter((r) => r.method === 'POST' && r.path.endsWith('/removebg'));

export const keyOf = (request: RecordedRequest): string | undefined =>
  request.headers['idempotency-key'] as string | undefined;

export const imageHashOf = (request: RecordedRequest): string => {
  const file = request.files.image_file;
  if (!file) throw new Error(`request to ${request.path} has no image_file part`);
  return sha256(file.data);
};

/**
 * Every POST carries an Idempotency-Key; one image always travels with one key, and no two images share
 * one. Returns image hash → its requests, in arrival order.
 */
export function expectOneKeyPerImage(requests: RecordedRequest[]): Map<string, RecordedRequest[]> {
  const byImage = new Map<string, RecordedRequest[]>();
  for (const request of posts(requests)) {
    expect(keyOf(request), 'Idempotency-Key header').toMatch(/^rmbg-[0-9a-f]{64}$/);
    const hash = imageHashOf(request);
    byImage.set(hash, [...(byImage.get(hash) ?? []), request]);
  }
  const keyOwners = new Map<string, string>();
  for (const [hash, sent] of byImage) {
    expect(new Set(sent.map(keyOf)).size, `distinct keys sent for one image`).toBe(1);
    const key = keyOf(sent[0] as RecordedRequest) as string;
    expect(keyOwners.get(key) ?? hash, 'one key shared by two images').toBe(hash);
    keyOwners.set(key, hash);
  }
  return byImage;
}

export interface UpstreamAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * Sends a recorded request on to the real server, as the fault server's proxy step does, for steps that
 * let the server do the work and then lose the answer.
 */
export function forwardTo(upstream: string, recorded: RecordedRequest): Promise<UpstreamAnswer> {
  const target = new URL(upstream);
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      {
        hostname: target.hostname,
        port: target.port,
        path: recorded.path,
        method: recorded.method,
        headers: { ...recorded.headers, host: target.host },
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () =>
          resolve({ status: answer.statusCode ?? 0, headers: answer.headers, body: Buffer.concat(chunks) }),
        );
        answer.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(recorded.body);
  });
}

/** A request the recording proxy passed on, with the server's status and when its answer went back. */
export interface Relayed {
  request: RecordedRequest;
  status: number;
  answeredAt: number;
}

/** The upstream's answer as a fault-server step, without the headers of its own connection. */
export function relayed(answer: UpstreamAnswer): FaultStep {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined && name !== 'transfer-encoding' && name !== 'connection' && name !== 'content-length')
      headers[name] = String(value);
  }
  return respond(answer.status, { headers, body: answer.body });
}

/**
 * A fault-server step that forwards to the real server and relays its answer, noting the status and the
 * moment it was answered (the fault server's own log has only arrivals).
 */
export function relayStep(upstream: string, relayedRequests: Relayed[]): FaultStep {
  return async (request) => {
    const answer = await forwardTo(upstream, request);
    relayedRequests.push({ request, status: answer.status, answeredAt: Date.now() });
    return relayed(answer);
  };
}

/** A network in front of the server that hands its answers back only as the test lets it (answerGate). */
export interface AnswerGate {
  /** The fault server's step: forwards at once (the server does the work and charges), then holds the answer. */
  step: FaultStep;
  /** Lets the next `count` answers go back (those waiting first). */
  pass(count: number): void;
  /** Lets every answer go back, now and later. */
  open(): void;
  /** Resolves once `count` answers are held. */
  holding(count: number): Promise<void>;
}

/**
 * A slow network in front of a quick server, as slow as the test says: each request reaches the server at once,
 * and its answer comes back only when pass() or open() lets it. A signal sent meanwhile finds requests in flight
 * whose result the server keeps, on any machine. Sets upstreamStatus as the fault server's proxy step does.
 */
export function answerGate(upstream: string): AnswerGate {
  let passing = 0;
  let opened = false;
  const held: Array<() => void> = [];
  const watchers: Array<{ count: number; resolve: () => void }> = [];
  const release = () => {
    while (held.length > 0 && (opened || passing > 0)) {
      if (!opened) passing -= 1;
      held.shift()?.();
    }
    for (const watcher of watchers.filter((w) => held.length >= w.count)) {
      watchers.splice(watchers.indexOf(watcher), 1);
      watcher.resolve();
    }
  };
  return {
    async step(request) {
      const answer = await forwardTo(upstream, request);
      request.upstreamStatus = answer.status;
      await new Promise<void>((go) => {
        held.push(go);
        release();
      });
      return relayed(answer);
    },
    pass(count) {
      passing += count;
      release();
    },
    open() {
      opened = true;
      release();
    },
    holding: (count) =>
      new Promise<void>((resolve) => {
        watchers.push({ count, resolve });
        release();
      }),
  };
}
