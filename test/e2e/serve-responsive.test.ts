// `rmbg serve` keeps answering while it runs the model: the inference runs on a worker thread
// (src/engine/inference-worker.ts), so /healthz does not wait for the image in flight.

import { rmSync } from 'node:fs';
import sharp from 'sharp';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { call, createKey, ensureBuilt, startServe, tempDataDir, type ServeProcess } from './serve-harness.js';

let server: ServeProcess | undefined;
let dataDir: string;

beforeAll(async () => {
  await ensureBuilt();
});

afterEach(async () => {
  await server?.stop();
  server = undefined;
  rmSync(dataDir, { recursive: true, force: true });
});

async function queueDepth(url: string): Promise<number> {
  const text = (await call(`${url}/metrics`)).body.toString();
  return Number(/^rmbg_queue_depth (\d+)$/m.exec(text)?.[1]);
}

it('answers /healthz, again and again, while an image is inside the model', async () => {
  dataDir = tempDataDir();
  const { key } = await createKey(dataDir, 3);
  server = await startServe(dataDir);
  const { url } = server;
  // A small image: decoding, composing and encoding it take milliseconds, the model's 1024² run takes
  // seconds; so nearly all the time the image is admitted, the server is inside the inference.
  const image = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#6a8caf' } }).png().toBuffer();

  const form = new FormData();
  form.append('image_file', new Blob([new Uint8Array(image)]), 'photo.png');
  let removalAnswered = false;
  const removal = call(`${url}/v1.0/removebg`, { method: 'POST', body: form, headers: { 'X-API-Key': key } }).finally(() => (removalAnswered = true));

  // Until the engine has the image (the gauge counts the image running and those waiting).
  while (!removalAnswered && (await queueDepth(url)) < 1);
  // One health check after another, each sent when the previous one answered, until the removal answers.
  const beforeRemoval: number[] = [];
  while (!removalAnswered) {
    const health = await call(`${url}/healthz`);
    if (!removalAnswered) beforeRemoval.push(health.status);
  }

  expect((await removal).status).toBe(200);
  // With the model on the main thread the loop stood still for the whole run: only the checks that fit in the
  // milliseconds around it (decode, compose, encode) were answered, 13 on a loaded 2-core machine. On the worker
  // thread the loop keeps answering through the run: 1831 in the same conditions.
  expect(beforeRemoval.length).toBeGreaterThanOrEqual(100);
  expect(new Set(beforeRemoval)).toEqual(new Set([200]));
});
