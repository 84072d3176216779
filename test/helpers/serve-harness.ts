// Shared by the serve-*.test.ts files: spawns the real `rmbg` CLI (over dist/, which the run's globalSetup
// builds) and starts `rmbg serve` on 127.0.0.1:0.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import sharp from 'sharp';
import { afterAll, beforeAll } from 'vitest';
import { servingPid } from '../../bench/lib/serving-process.mjs';
import { rmbg as runCli } from './cli.js';
import { writeIdentityModel } from './onnx-writer.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = join(ROOT, 'bin', 'rmbg.js');
export const SAMPLES = join(ROOT, 'samples');

/** dist/ is built by the run's globalSetup (test/global-setup.ts); kept so callers need not change. */
export async function ensureBuilt(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))
    throw new Error('dist/ is missing: run the tests with vitest, whose globalSetup builds it');
}

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'rmbg-e2e-'));
}

/** The CLI as every test runs it (test/helpers/cli.ts): no inherited RMBG_* settings, no settings file. */
export function rmbg(args: string[]) {
  return runCli(args);
}

export interface CreatedKey {
  key: string;
  account: string;
  plan: string;
  credits: number;
}

export async function createKey(dataDir: string, credits = 10, plan = 'pro'): Promise<CreatedKey> {
  const result = await rmbg([
    'keys',
    'create',
    '--json',
    '--credits',
    String(credits),
    '--plan',
    plan,
    '--data-dir',
    dataDir,
  ]);
  if (result.exitCode !== 0) throw new Error(`keys create failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as CreatedKey;
}

export interface ServeProcess {
  url: string;
  dataDir: string;
  child: ResultPromise<{ reject: false; forceKillAfterDelay: false }>;
  /** The serving process's pid, for what is read of it or done to it alone (its memory, SIGSTOP): on Node 20 a
   * child of `child` (bin/malloc-tuning.js), else `child`'s own. */
  pid: number;
  stderr(): string;
  /** Sends the signal to the serving process and resolves with the exit code once the spawned one is gone (on
   * Node 20 it ends as its child did). */
  stop(signal?: NodeJS.Signals): Promise<number | undefined>;
}

/** `env` is added to this process's environment for the server (e.g. NODE_EXTRA_CA_CERTS, NODE_OPTIONS). */
export async function startServe(
  dataDir: string,
  flags: string[] = [],
  env: Record<string, string> = {},
  /** Node flags before the CLI, e.g. an inference gate's (test/helpers/inference-gate.ts). */
  nodeArgs: string[] = [],
): Promise<ServeProcess> {
  const args = [...nodeArgs, CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, ...flags];
  const child = execa('node', args, {
    cwd: ROOT,
    env,
    reject: false,
    // Draining may take a while on a busy machine; execa's default SIGKILL after 5 s would cut it short.
    forceKillAfterDelay: false,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolveUrl, rejectUrl) => {
    const timer = setTimeout(
      () => rejectUrl(new Error(`rmbg serve did not report its URL in 90 s; stderr:\n${stderr}`)),
      90_000,
    );
    const check = () => {
      const match = /rmbg: listening on (http:\/\/\S+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1] as string);
      }
    };
    child.stdout.on('data', check);
    void child.then((result) => {
      clearTimeout(timer);
      rejectUrl(new Error(`rmbg serve exited with ${result.exitCode} before listening; stderr:\n${stderr}`));
    });
  });
  const pid = servingPid(child.pid as number);
  return {
    url,
    dataDir,
    child,
    pid,
    stderr: () => stderr,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) process.kill(pid, signal);
      return (await child).exitCode;
    },
  };
}

/** `rmbg serve` over a tiny identity model written into dataDir, for tests of the server rather than of the cut:
 * it starts in a moment, and a photo keeps its size (its output is named like the manifest's, so the engine takes
 * its first plane as the mask). */
export async function startIdentityServe(
  dataDir: string,
  flags: string[] = [],
  env: Record<string, string> = {},
): Promise<ServeProcess> {
  const model = join(dataDir, 'identity.onnx');
  writeIdentityModel(model, 'input', 'output');
  return startServe(dataDir, ['--model', model, ...flags], env);
}

/** The server of a test file (identityServeForFile), set once its tests may run. */
export interface FileServe {
  server: ServeProcess;
  dataDir: string;
}

/**
 * One identity `rmbg serve` (startIdentityServe) with `flags` for all the tests of a file: started in a fresh data
 * directory before them, stopped and its directory removed after them.
 */
export function identityServeForFile(flags: string[]): FileServe {
  const at = {} as FileServe;
  beforeAll(async () => {
    await ensureBuilt();
    at.dataDir = tempDataDir();
    at.server = await startIdentityServe(at.dataDir, flags);
  });
  afterAll(async () => {
    await at.server?.stop();
    if (at.dataDir) rmSync(at.dataDir, { recursive: true, force: true });
  });
  return at;
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  body: Buffer;
}

export async function call(url: string, init: RequestInit = {}): Promise<HttpAnswer> {
  const response = await fetch(url, init);
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

export function errorCode(answer: HttpAnswer): string {
  const body = JSON.parse(answer.body.toString()) as { errors: Array<{ code: string; title: string }> };
  if (typeof body.errors[0]?.title !== 'string') throw new Error(`error body without title: ${answer.body.toString()}`);
  return body.errors[0].code;
}

export async function balance(
  url: string,
  key: string,
): Promise<{ total: number; subscription: number; payg: number }> {
  const answer = await call(`${url}/v1.0/account`, { headers: { 'X-API-Key': key } });
  if (answer.status !== 200) throw new Error(`GET /v1.0/account answered ${answer.status}: ${answer.body.toString()}`);
  const { credits } = (
    JSON.parse(answer.body.toString()) as {
      data: { attributes: { credits: { total: number; subscription: number; payg: number } } };
    }
  ).data.attributes;
  return { total: credits.total, subscription: credits.subscription, payg: credits.payg };
}

/** A removal's JSON body whose answer is far larger than the sockets' buffers hold: a 9 MP noise photo at full size
 * as PNG (noise does not compress: about 36 MB), for the tests of answers sent slowly or not at all. */
export async function largeAnswerBody(): Promise<Buffer> {
  const photo = await sharp({
    create: {
      width: 3000,
      height: 3000,
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: 60 },
    },
  })
    .jpeg({ quality: 90 })
    .toBuffer();
  return Buffer.from(JSON.stringify({ image_file_b64: photo.toString('base64'), size: 'full', format: 'png' }));
}
