// What only the `rmbg serve` process shows, with quick test models (the model's output does not matter
// here): what it says at start-up, --no-ui, the admin commands acting on the store of a running server at
// once, --max-queue and --processing-timeout reaching the engine's line (the 503 and 504 themselves are
// checked in test/unit/server/http-contract.test.ts), and SIGTERM, which lets the request in flight finish
// before the process exits 0.

import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../helpers/onnx-writer.js';
import { type InferenceGate, inferenceGate } from '../helpers/inference-gate.js';
import {
  balance,
  call,
  createKey,
  ensureBuilt,
  errorCode,
  rmbg,
  SAMPLES,
  startServe,
  tempDataDir,
  type ServeProcess,
} from '../helpers/serve-harness.js';

const photo = readFileSync(join(SAMPLES, 'rocket.jpg'));
/** Started on an empty data dir, with --no-ui. */
let fresh: ServeProcess;
let freshDir: string;
/** Started with a key already in its data dir, --allow-private-urls and --max-queue 0; SIGTERMed by the last test. */
let keyed: ServeProcess;
let keyedDir: string;
let keyedKey: string;
/** --processing-timeout 1. */
let timed: ServeProcess;
/** Hold the model's runs of `keyed` and `timed` until the tests let them go: in flight, or late, on any machine. */
let keyedGate: InferenceGate;
let timedGate: InferenceGate;

beforeAll(async () => {
  await ensureBuilt();
  freshDir = tempDataDir();
  keyedDir = tempDataDir();
  const model = join(freshDir, 'identity.onnx');
  // Named like the manifest's output: every inference succeeds, with the input's first plane as the mask.
  writeIdentityModel(model, 'input', 'output');
  keyedGate = inferenceGate();
  timedGate = inferenceGate();
  [fresh, keyed, timed] = await Promise.all([
    startServe(freshDir, ['--model', model, '--no-ui']),
    createKey(keyedDir, 2).then(async ({ key }) => {
      keyedKey = key;
      return startServe(
        keyedDir,
        ['--model', model, '--allow-private-urls', '--max-queue', '0'],
        keyedGate.env,
        keyedGate.nodeArgs,
      );
    }),
    startServe(tempDataDir(), ['--model', model, '--processing-timeout', '1'], timedGate.env, timedGate.nodeArgs),
  ]);
});

afterAll(async () => {
  for (const gate of [keyedGate, timedGate]) gate?.open();
  await Promise.all([fresh?.stop(), keyed?.stop(), timed?.stop()]);
  for (const gate of [keyedGate, timedGate]) gate?.remove();
  for (const dir of [freshDir, keyedDir, timed?.dataDir]) if (dir) rmSync(dir, { recursive: true, force: true });
});

async function queueDepth(url: string): Promise<number> {
  const text = (await call(`${url}/metrics`)).body.toString();
  return Number(/^rmbg_queue_depth (\d+)$/m.exec(text)?.[1]);
}

/** Resolves once the server's stderr shows `text`. */
function stderrShows(server: ServeProcess, text: string): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!server.stderr().includes(text)) return;
      server.child.stderr?.off('data', check);
      resolve();
    };
    server.child.stderr?.on('data', check);
    check();
  });
}

function upload(server: ServeProcess, key: string, image: Buffer = photo, fields: Record<string, string> = {}) {
  const form = new FormData();
  form.append('image_file', new Blob([new Uint8Array(image)]), 'photo');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return call(`${server.url}/v1.0/removebg`, { method: 'POST', body: form, headers: { 'X-API-Key': key } });
}

describe('start-up', () => {
  it('tells how to create a key when the data dir has none, and warns about --allow-private-urls', () => {
    expect(fresh.stderr()).toContain('rmbg keys create');
    expect(fresh.stderr()).not.toMatch(/allow-private-urls/);
    expect(keyed.stderr()).toMatch(/WARNING: --allow-private-urls/);
    expect(keyed.stderr()).not.toContain('no API keys yet');
  });

  it('with --no-ui serves the API only: / is 404 and the API still answers', async () => {
    expect((await call(`${fresh.url}/`)).status).toBe(404);
    expect((await call(`${fresh.url}/app.js`)).status).toBe(404);
    expect((await call(`${fresh.url}/v1.0/account`)).status).toBe(403);
    expect(fresh.stderr()).not.toContain('web page');
    expect(keyed.stderr()).toContain('web page');
  });
});

describe('admin commands on the data dir of a running server', () => {
  it('credits added by `rmbg credits add` are spent at once: 402 before, served after', async () => {
    const { key } = await createKey(freshDir, 0);
    const refused = await upload(fresh, key);
    expect([refused.status, errorCode(refused)]).toEqual([402, 'insufficient_credits']);
    expect(await balance(fresh.url, key)).toEqual({ total: 0, subscription: 0, payg: 0 });

    const added = await rmbg(['credits', 'add', '2', '--key', key, '--subscription', '--data-dir', freshDir]);
    expect(added.exitCode).toBe(0);
    expect(await balance(fresh.url, key)).toEqual({ total: 2, subscription: 2, payg: 0 });
    expect((await upload(fresh, key)).status).toBe(200);
    expect(await balance(fresh.url, key)).toEqual({ total: 1, subscription: 1, payg: 0 });
  });

  it('a key revoked by `rmbg keys revoke` is refused at once; `rmbg keys list` never shows a whole key', async () => {
    const revoked = await createKey(freshDir, 5);
    expect((await call(`${fresh.url}/v1.0/account`, { headers: { 'X-API-Key': revoked.key } })).status).toBe(200);
    const listed = JSON.parse((await rmbg(['keys', 'list', '--json', '--data-dir', freshDir])).stdout) as Array<{
      id: string;
      prefix: string;
      revoked: string | null;
    }>;
    expect(JSON.stringify(listed)).not.toContain(revoked.key);
    const entry = listed.find((k) => revoked.key.startsWith(k.prefix) && k.revoked === null);
    expect((await rmbg(['keys', 'revoke', entry!.id, '--data-dir', freshDir])).exitCode).toBe(0);
    const after = await call(`${fresh.url}/v1.0/account`, { headers: { 'X-API-Key': revoked.key } });
    expect([after.status, errorCode(after)]).toEqual([403, 'invalid_api_key']);
  });
});

describe('the flags of the engine line', () => {
  it('--processing-timeout 1: a request that takes longer is answered 504 and refunded', async () => {
    const { key } = await createKey(timed.dataDir, 2);
    timedGate.close();
    // The run waits in the model until the test ends: longer than the limit on any machine. (On a loaded one the
    // limit may pass before the image even reaches the model: a 504 too, so the run's arrival is not awaited.)
    const answer = await upload(timed, key);
    expect([answer.status, errorCode(answer)]).toEqual([504, 'processing_timeout']);
    expect(await balance(timed.url, key)).toMatchObject({ total: 2 });
  });
});

describe('shutdown', () => {
  it('with --max-queue 0 refuses a second image while one runs (503); on SIGTERM finishes the one in flight, then exits 0', async () => {
    keyedGate.close();
    const inFlight = upload(keyed, keyedKey, photo, { format: 'png' });
    await keyedGate.held();
    expect(await queueDepth(keyed.url)).toBe(1);
    const busy = await upload(keyed, keyedKey);
    expect([busy.status, errorCode(busy)]).toEqual([503, 'service_busy']);
    expect(Number(busy.headers.get('retry-after'))).toBeGreaterThan(0);
    // Of the key's 2 credits, only the image in the engine is charged.
    expect(await balance(keyed.url, keyedKey)).toMatchObject({ total: 1 });
    const exited = keyed.stop('SIGTERM');
    await stderrShows(keyed, 'SIGTERM: finishing requests in flight');
    keyedGate.open();
    const answer = await inFlight.catch((error: unknown) => {
      throw new Error(`request in flight failed (${String(error)}); server stderr:\n${keyed.stderr()}`);
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('image/png');
    expect(await exited, keyed.stderr()).toBe(0);
    expect(keyed.stderr()).toContain('SIGTERM');
    await expect(fetch(`${keyed.url}/v1.0/account`)).rejects.toThrow();
  });
});
