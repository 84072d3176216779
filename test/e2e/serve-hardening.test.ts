// Attacks on the real `rmbg serve` (real model, real SQLite, 127.0.0.1), one shared server: each test is
// an attack from issue #10 and what a user sees while it runs.

import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { samplePeakRss, rssBytes } from '../helpers/peak-rss.js';
import { answerCode, uploadUntilAnswered } from '../helpers/raw-upload.js';
import { balance, call, createKey, ensureBuilt, SAMPLES, startServe, tempDataDir, type ServeProcess } from './serve-harness.js';

const photo = readFileSync(join(SAMPLES, 'rocket.jpg'));
const MB = 1024 * 1024;

let server: ServeProcess;
let dataDir: string;

beforeAll(async () => {
  await ensureBuilt();
  dataDir = tempDataDir();
  // Failed authentications are not throttled here (the unit tests cover that): the upload attack is 30 of them.
  server = await startServe(dataDir, ['--rate-limit', '1000', '--max-auth-failures', '1000']);
});

afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

function removebg(key: string, form: FormData) {
  return call(`${server.url}/v1.0/removebg`, { method: 'POST', body: form, headers: { 'X-API-Key': key } });
}

function photoForm(fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  form.append('image_file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'rocket.jpg');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return form;
}

describe('bodies are not read before authentication', () => {
  it('30 concurrent unauthenticated 30 MB uploads: each 403 within a second, RSS grows < 200 MB, a keyed request is served meanwhile', async () => {
    const { key } = await createKey(dataDir, 5);
    const pid = server.child.pid as number;
    const before = rssBytes(pid);
    const peak = samplePeakRss(pid);
    const attacks = Array.from({ length: 30 }, () =>
      uploadUntilAnswered(`${server.url}/v1.0/removebg`, {
        headers: { 'content-type': 'application/json' },
        prefix: '{"image_file_b64":"',
        totalBytes: 30 * MB,
      }),
    );
    // An account query, not an image: a run of the model alone takes hundreds of MB, which would hide what the attack costs.
    const honest = call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
    const answers = await Promise.all(attacks);
    const served = await honest;
    const grown = peak.stop() - before;

    for (const answer of answers) {
      expect(answer.status).toBe(403);
      expect(answerCode(answer)).toBe('missing_api_key');
      expect(answer.elapsedMs).toBeLessThan(1000);
    }
    expect(grown).toBeLessThan(200 * MB);
    expect(served.status).toBe(200);
    expect(await balance(server.url, key)).toMatchObject({ total: 5 });
  });
});
