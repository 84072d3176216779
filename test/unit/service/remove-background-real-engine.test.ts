// One request through the service with the real ONNX engine: a sample photo (a cat) comes back as a
// cut-out PNG with transparent background and opaque foreground, is charged once, and replays byte for byte.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_OPTIONS } from '../../../src/api/options.js';
import { createEngine } from '../../../src/engine/index.js';
import type { BackgroundRemover } from '../../../src/engine/types.js';
import { createService, type Service } from '../../../src/service/index.js';
import { imageUrlFetcher } from '../../../src/service/image-url.js';
import { openStore, type Store } from '../../../src/store/index.js';

let dir: string;
let store: Store;
let engine: BackgroundRemover;
let service: Service;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-service-real-'));
  store = await openStore(dir);
  engine = await createEngine();
  service = await createService({
    store,
    engine,
    creditsPerImage: 1,
    rateLimitPerMinute: 60,
    maxQueue: 2,
    processingTimeoutMs: 120_000,
    fetchImage: imageUrlFetcher({ allowPrivate: false }),
    maxInFlightPerKey: 4,
    maxAuthFailures: 30,
    maxUrlFetches: 8,
  });
});
afterAll(async () => {
  await service?.close();
  await engine?.close();
  store?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('removes the background of a real photo, charges once and replays the same bytes', async () => {
  const { key, accountId } = await store.createAccountWithKey({ plan: 'pro', credits: 3 });
  const photo = readFileSync(join(import.meta.dirname, '../../../samples/chelsea.png'));
  const req = {
    apiKey: key,
    idempotencyKey: 'chelsea',
    source: { kind: 'file' as const, data: photo },
    options: { ...DEFAULT_OPTIONS, format: 'png' as const },
    requestId: randomUUID(),
  };

  const outcome = await service.handleRemoveRequest(req);
  expect(outcome.image.mimeType).toBe('image/png');
  expect(outcome.image.width * outcome.image.height).toBeLessThanOrEqual(250_000);
  const { data, info } = await sharp(outcome.image.data).raw().toBuffer({ resolveWithObject: true });
  expect([info.width, info.height, info.channels]).toEqual([outcome.image.width, outcome.image.height, 4]);
  let transparent = 0;
  let opaque = 0;
  for (let i = 3; i < data.length; i += 4) {
    if ((data[i] as number) < 16) transparent++;
    else if ((data[i] as number) > 240) opaque++;
  }
  const pixels = info.width * info.height;
  expect(transparent / pixels).toBeGreaterThan(0.05);
  expect(opaque / pixels).toBeGreaterThan(0.05);
  expect((await store.balance(accountId)).total).toBe(2);

  const replay = await service.handleRemoveRequest({ ...req, requestId: randomUUID() });
  expect([replay.replayed, replay.requestId, replay.creditsCharged]).toEqual([true, req.requestId, 1]);
  expect(replay.image.data.equals(outcome.image.data)).toBe(true);
  expect((await store.balance(accountId)).total).toBe(2);
});
