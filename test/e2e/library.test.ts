// The library's functions against a real server on 127.0.0.1, as a program uses them: one library instance and
// one embedded server shared by every test. The first test runs the real model (its cutout's pixels are checked);
// the rest run the warm-key model (test/helpers/fast-models.ts: real ONNX, milliseconds), since they check
// sizes, aborts, charges and batches, and the close test a model that takes a known long while.

import { existsSync, mkdirSync, readdirSync, readFileSync, copyFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FOREGROUND_ALPHA } from '../../src/engine/output/compose.js';
import { openStore } from '../../src/store/index.js';
import {
  createRmbg,
  createServer,
  RmbgError,
  type BatchEvent,
  type Rmbg,
  type RmbgServer,
  type Size,
} from '../../src/index.js';
import { createFaultServer, drop } from '../helpers/fault-server.js';
import { inferenceGate } from '../helpers/inference-gate.js';
import { rejectionOf } from '../helpers/rejection.js';
import { removeTempDirs, ROOT, tempDir } from '../helpers/cli.js';
import { warmKeyModel } from '../helpers/fast-models.js';
import { jpegPhoto } from '../helpers/hostile-images.js';

const ASTRONAUT = path.join(ROOT, 'samples/astronaut.png'); // 512×512
const CREDITS = 10;
/** On-device calls run the warm-key model, as the server does. */
const FAST = { model: warmKeyModel() } as const;

let rmbg: Rmbg;
let server: RmbgServer;
let dataDir: string;
let apiKey: string;

beforeAll(async () => {
  rmbg = createRmbg();
  dataDir = tempDir();
  const store = await openStore(dataDir);
  apiKey = (await store.createAccountWithKey({ plan: 'pro', credits: CREDITS })).key;
  await store.close();
  server = await createServer({ port: 0, dataDir, model: FAST.model });
});

afterAll(async () => {
  await server?.close();
  await rmbg?.close();
  removeTempDirs();
});

async function post(
  fields: Record<string, string>,
  file?: Buffer,
  to = { url: server.url, key: apiKey },
): Promise<{ status: number; body: Buffer }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (file) form.append('image_file', new Blob([new Uint8Array(file)]), 'photo.png');
  const response = await fetch(`${to.url}/v1.0/removebg`, {
    method: 'POST',
    headers: { 'X-API-Key': to.key },
    body: form,
  });
  return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
}

const detailOf = (body: Buffer) =>
  (JSON.parse(body.toString()) as { errors: Array<{ code: string; detail: string }> }).errors[0];

describe('removeBackground', () => {
  it('gives the same cutout from a Buffer and a path, sized by `size`, its foreground box on the input', async () => {
    // Concurrent calls: the two on the warm-key model share the instance's one engine of it, and give the same
    // bytes; the real model's cutout (one inference) is the one whose pixels are checked. (The other input kinds:
    // test/unit/library.)
    const [result, fromBuffer, fromPath] = await Promise.all([
      rmbg.removeBackground(ASTRONAUT, { size: 'preview' }),
      rmbg.removeBackground(readFileSync(ASTRONAUT), { ...FAST, size: 'preview' }),
      rmbg.removeBackground(ASTRONAUT, { ...FAST, size: 'preview' }),
    ]);
    expect(fromPath.data.equals(fromBuffer.data)).toBe(true);

    // preview: at most 0.25 MP, the 512×512 input scaled down, never cropped.
    expect({ format: result.format, width: result.width, height: result.height }).toEqual({
      format: 'png',
      width: 500,
      height: 500,
    });
    const { data, info } = await sharp(result.data).raw().toBuffer({ resolveWithObject: true });
    expect({ width: info.width, height: info.height, channels: info.channels }).toEqual({
      width: 500,
      height: 500,
      channels: 4,
    });
    const alpha = (x: number, y: number) => data[(y * info.width + x) * 4 + 3] as number;
    let [left, top, right, bottom] = [info.width, info.height, -1, -1];
    let cleared = 0;
    for (let y = 0; y < info.height; y++) {
      for (let x = 0; x < info.width; x++) {
        if (alpha(x, y) === 0) cleared += 1;
        if (alpha(x, y) >= FOREGROUND_ALPHA)
          [left, top, right, bottom] = [Math.min(left, x), Math.min(top, y), Math.max(right, x), Math.max(bottom, y)];
      }
    }
    expect(cleared).toBeGreaterThan(info.width * info.height * 0.1); // the background is gone …
    expect(alpha(250, 250)).toBe(255); // … and the astronaut stays
    // The box is in input pixels (512 per 500): the box of the foreground's pixels, scaled, rounded outwards.
    const scale = 512 / 500;
    const box = result.foreground!;
    expect(box.left).toBe(Math.floor(left * scale));
    expect(box.top).toBe(Math.floor(top * scale));
    expect(box.left + box.width).toBe(Math.min(512, Math.ceil((right + 1) * scale)));
    expect(box.top + box.height).toBe(Math.min(512, Math.ceil((bottom + 1) * scale)));
  });

  it('rejects a cancelled call with AbortError', async () => {
    const cancel = new AbortController();
    const call = rmbg.removeBackground(ASTRONAUT, { ...FAST, signal: cancel.signal });
    cancel.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
  });

  it("rejects with the signal's reason as soon as it aborts, whatever the call waits on, and the instance keeps working", async () => {
    // A Blob whose bytes never come (a stalled upload, say): only the abort can end this call.
    class StalledBlob extends Blob {
      override arrayBuffer(): Promise<ArrayBuffer> {
        return new Promise(() => undefined);
      }
    }
    const cancel = new AbortController();
    const call = rmbg.removeBackground(new StalledBlob([]), { ...FAST, signal: cancel.signal });
    cancel.abort(new Error('the user closed the tab'));
    await expect(call).rejects.toThrow('the user closed the tab');
    // Cancelled while its turn at the model came: the next call still gets the model.
    const busy = new AbortController();
    const cancelled = rmbg.removeBackground(ASTRONAUT, { ...FAST, signal: busy.signal, size: 'small' });
    busy.abort();
    await expect(cancelled).rejects.toMatchObject({ name: 'AbortError' });
    expect((await rmbg.removeBackground(ASTRONAUT, { ...FAST, size: 'small' })).width).toBe(500);
  });

  it("rejects a bad option with the schema's message, as the server answers it", async () => {
    const error = await rejectionOf(rmbg.removeBackground(ASTRONAUT, { ...FAST, size: 'huge' as Size }));
    const answer = await post({ size: 'huge' }, readFileSync(ASTRONAUT));
    expect(answer.status).toBe(400);
    expect({ code: error.code, status: error.status, message: error.message }).toEqual({
      code: 'invalid_option',
      status: 400,
      message: detailOf(answer.body)!.detail,
    });
    expect(error).toBeInstanceOf(RmbgError);
  });

  it('on this computer, a TIFF and its mask (`mask: true`); through apiUrl both are refused as local only', async () => {
    const result = await rmbg.removeBackground(ASTRONAUT, { ...FAST, format: 'tiff', mask: true });
    expect(result).toMatchObject({ format: 'tiff', width: 512, height: 512 });
    const mask = await sharp(result.mask).toColourspace('b-w').raw().toBuffer({ resolveWithObject: true });
    expect(mask.info).toMatchObject({ width: 512, height: 512, channels: 1 });
    const tiffAlpha = await sharp(result.data).extractChannel(3).raw().toBuffer();
    expect(tiffAlpha.equals(mask.data)).toBe(true);
    for (const options of [{ format: 'psd' as const }, { mask: true }]) {
      const error = await rejectionOf(rmbg.removeBackground(ASTRONAUT, { ...options, apiUrl: server.url, apiKey }));
      expect({ code: error.code, local: /local only/.test(error.message) }).toEqual({
        code: 'usage_error',
        local: true,
      });
    }
  });

  it("fetches an https: URL under the server's image_url rules: a loopback address is refused as the server refuses it", async () => {
    const url = 'https://127.0.0.1/cat.png';
    const error = await rejectionOf(rmbg.removeBackground(new URL(url), FAST));
    const answer = await post({ image_url: url });
    expect(answer.status).toBe(400);
    expect({ code: error.code, message: error.message }).toEqual({
      code: detailOf(answer.body)!.code,
      message: detailOf(answer.body)!.detail,
    });
  });

  it('through apiUrl: the server answers the same image, and the same call twice is charged once', async () => {
    const options = { size: 'preview', format: 'png' } as const;
    const local = await rmbg.removeBackground(ASTRONAUT, { ...options, ...FAST });
    const first = await rmbg.removeBackground(ASTRONAUT, { ...options, apiUrl: server.url, apiKey });
    const again = await rmbg.removeBackground(ASTRONAUT, { ...options, apiUrl: server.url, apiKey });
    expect(first.device).toBeUndefined(); // the server does not say where its model ran
    expect({ ...first, data: undefined }).toEqual({ ...local, data: undefined, device: undefined });
    expect(first.data.equals(local.data)).toBe(true);
    expect(again.data.equals(first.data)).toBe(true);
    const account = await fetch(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': apiKey } }).then(
      (r) => r.json() as Promise<{ data: { attributes: { credits: { total: number } } } }>,
    );
    expect(account.data.attributes.credits.total).toBe(CREDITS - 1);
  });

  it('through apiUrl: a lost connection is retried with the same Idempotency-Key, and the image is charged once', async () => {
    const before = await creditsLeft();
    // Between the library and the server: the first request's connection drops, the next ones reach the server.
    const faults = await createFaultServer({ upstream: server.url, script: [drop()] });
    try {
      // jpegPhoto's disc: the warm-key model's box is inside the photo on both axes, as the real model's astronaut was.
      const result = await rmbg.removeBackground(await jpegPhoto(512, 512), {
        size: 'small',
        crop: true,
        apiUrl: faults.url,
        apiKey,
      });
      expect({ format: result.format, width: result.width < 512, height: result.height < 512 }).toEqual({
        format: 'png',
        width: true,
        height: true,
      });
      const keys = faults.requests.map((request) => request.headers['idempotency-key']);
      expect(keys).toHaveLength(2);
      expect(keys[0]).toMatch(/\S{16,}/);
      expect(keys[1]).toBe(keys[0]);
    } finally {
      await faults.close();
    }
    expect(await creditsLeft()).toBe(before - 1);
  });
});

describe('where the model ran', () => {
  it("the result and the batch's events say the device: each file done, and the summary", async () => {
    const result = await rmbg.removeBackground(ASTRONAUT, { ...FAST, device: 'cpu', size: 'preview' });
    expect(result.device).toBe('cpu');
    const inputDir = tempDir();
    copyFileSync(ASTRONAUT, path.join(inputDir, 'astronaut.png'));
    const outDir = path.join(tempDir(), 'out');
    const events: BatchEvent[] = [];
    for await (const event of rmbg.removeBackgrounds(inputDir, { ...FAST, device: 'cpu', outDir, size: 'preview' }))
      events.push(event);
    expect(events.filter((event) => event.type === 'file')).toEqual([
      expect.objectContaining({ status: 'done', device: 'cpu' }),
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'summary', done: 1, device: 'cpu' });
  });
});

describe('removeBackgrounds', () => {
  it('a batch aborted after its first file (or left with break), run again, produces each output once and leaves no partial file', async () => {
    const inputDir = tempDir();
    const outDir = path.join(tempDir(), 'out');
    const names = ['astronaut.png', 'chelsea.png', 'coffee.png'];
    mkdirSync(inputDir, { recursive: true });
    for (const name of names) copyFileSync(path.join(ROOT, 'samples', name), path.join(inputDir, name));
    const options = { ...FAST, outDir, size: 'preview', format: 'png', concurrency: 1 } as const;

    const stop = new AbortController();
    const firstRun: BatchEvent[] = [];
    const stopped = await (async () => {
      for await (const event of rmbg.removeBackgrounds(inputDir, { ...options, signal: stop.signal })) {
        firstRun.push(event);
        if (event.type === 'file') stop.abort();
      }
    })().then(
      () => 'finished',
      (error: Error) => error.name,
    );
    expect(stopped).toBe('AbortError');
    const doneFirst = firstRun.flatMap((event) =>
      event.type === 'file' && event.status === 'done' ? [path.basename(event.input)] : [],
    );
    expect(doneFirst.length).toBeGreaterThanOrEqual(1);
    expect(doneFirst.length).toBeLessThan(names.length);
    // Files cancelled in flight report it; nothing else but the outputs done (and the journal) is on disk.
    for (const event of firstRun)
      if (event.type === 'file' && event.status === 'failed') expect(event.error?.code).toBe('interrupted');
    expect(firstRun.some((event) => event.type === 'summary')).toBe(false);
    expect(
      readdirSync(outDir)
        .filter((name) => !name.startsWith('.rmbg-journal') && name !== 'review.html')
        .sort(),
    ).toEqual([...doneFirst].sort());

    // Leaving the loop early stops the batch too, and only once it has wound down: the folder is free at once.
    let doneSecond: string | undefined;
    for await (const event of rmbg.removeBackgrounds(inputDir, options)) {
      if (event.type === 'file' && event.status === 'done') {
        doneSecond = path.basename(event.input);
        break;
      }
    }
    expect(doneSecond).toBeDefined();

    const lastRun: BatchEvent[] = [];
    for await (const event of rmbg.removeBackgrounds(inputDir, options)) lastRun.push(event);
    const files = lastRun.flatMap((event) => (event.type === 'file' ? [event] : []));
    const doneLast = files.filter((event) => event.status === 'done').map((event) => path.basename(event.input));
    const doneBefore = [...doneFirst, doneSecond as string];
    expect(
      files
        .filter((event) => event.status === 'skipped')
        .map((event) => path.basename(event.input))
        .sort(),
    ).toEqual(doneBefore.sort());
    expect([...doneBefore, ...doneLast].sort()).toEqual(names);
    expect(lastRun.at(-1)).toMatchObject({
      type: 'summary',
      total: 3,
      done: doneLast.length,
      skipped: doneBefore.length,
      failed: 0,
      stoppedBy: null,
    });
    expect(
      readdirSync(outDir)
        .filter((name) => !name.startsWith('.rmbg-journal') && name !== 'review.html')
        .sort(),
    ).toEqual(names);
    for (const name of names) expect((await sharp(path.join(outDir, name)).metadata()).format).toBe('png');
  });
});

describe('removeBackgrounds through apiUrl', () => {
  it('a batch aborted after its first file and run again charges each image once and writes each output once', async () => {
    const inputDir = tempDir();
    const outDir = path.join(tempDir(), 'out');
    const names = ['astronaut.png', 'chelsea.png', 'coffee.png'];
    for (const name of names) copyFileSync(path.join(ROOT, 'samples', name), path.join(inputDir, name));
    // webp: options no earlier test sent, so no answer of theirs is replayed here.
    const options = { outDir, size: 'preview', format: 'webp', concurrency: 1, apiUrl: server.url, apiKey } as const;
    const before = await creditsLeft();

    const stop = new AbortController();
    const charged: number[] = [];
    await expect(
      (async () => {
        for await (const event of rmbg.removeBackgrounds(inputDir, { ...options, signal: stop.signal })) {
          if (event.type === 'file' && event.status === 'done') {
            charged.push(event.credits);
            stop.abort();
          }
        }
      })(),
    ).rejects.toMatchObject({ name: 'AbortError' });
    const events: BatchEvent[] = [];
    for await (const event of rmbg.removeBackgrounds(inputDir, options)) events.push(event);

    const summary = events.at(-1);
    expect(summary).toMatchObject({ type: 'summary', total: 3, failed: 0, stoppedBy: null });
    const done = events.flatMap((event) => (event.type === 'file' && event.status === 'done' ? [event] : []));
    expect(done.length + charged.length).toBeGreaterThanOrEqual(names.length);
    // Whatever the abort cut short was either journalled and replayed or sent again under its key: one charge per image.
    expect(await creditsLeft()).toBe(before - names.length);
    expect(
      readdirSync(outDir)
        .filter((name) => !name.startsWith('.rmbg-journal') && name !== 'review.html')
        .sort(),
    ).toEqual(names.map((name) => name.replace('.png', '.webp')));
  });
});

describe('removeBackgrounds with watch: true', () => {
  it('processes a photo that lands after the start, then ends when the loop is left', async () => {
    const inputDir = tempDir();
    const outDir = path.join(tempDir(), 'out');
    const events: BatchEvent[] = [];
    for await (const event of rmbg.removeBackgrounds(inputDir, { ...FAST, outDir, size: 'preview', watch: true })) {
      events.push(event);
      // The folder is empty at the start; the photo is copied in once the batch has begun.
      if (event.type === 'start') copyFileSync(ASTRONAUT, path.join(inputDir, 'astronaut.png'));
      if (event.type === 'file') break;
    }
    expect(events.map((event) => event.type)).toEqual(['start', 'arrived', 'file']);
    expect(events[1]).toMatchObject({ type: 'arrived', input: path.join(inputDir, 'astronaut.png'), total: 1 });
    expect(events[2]).toMatchObject({
      type: 'file',
      status: 'done',
      width: 500,
      height: 500,
      output: path.join(outDir, 'astronaut.png'),
    });
    expect((await sharp(path.join(outDir, 'astronaut.png')).metadata()).format).toBe('png');
  });

  it('with maskOnly, writes only the mask of a photo that lands', async () => {
    const inputDir = tempDir();
    const outDir = path.join(tempDir(), 'out');
    const events: BatchEvent[] = [];
    for await (const event of rmbg.removeBackgrounds(inputDir, { ...FAST, outDir, watch: true, maskOnly: true })) {
      events.push(event);
      if (event.type === 'start') copyFileSync(ASTRONAUT, path.join(inputDir, 'astronaut.png'));
      if (event.type === 'file') break;
    }
    const mask = path.join(outDir, 'astronaut.mask.png');
    expect(events.at(-1)).toMatchObject({ type: 'file', status: 'done', output: mask, mask });
    expect(readdirSync(outDir).filter((name) => !name.startsWith('.'))).toEqual(['astronaut.mask.png']);
    expect(await sharp(mask).metadata()).toMatchObject({ width: 512, height: 512, channels: 1 });
  });
});

describe('createServer', () => {
  it('closes cleanly: requests in flight are answered, then the port and the data directory are released', async () => {
    // Its own server, whose model runs wait for the test's word: the request is surely in the model when
    // close() starts, on any machine.
    const closingDir = tempDir();
    const store = await openStore(closingDir);
    const key = (await store.createAccountWithKey({ plan: 'pro', credits: CREDITS })).key;
    await store.close();
    const gate = inferenceGate();
    try {
      const closing = await gate.whileStarting(() =>
        createServer({ port: 0, dataDir: closingDir, model: warmKeyModel() }),
      );
      gate.close();
      const inFlight = post({ size: 'preview' }, readFileSync(ASTRONAUT), { url: closing.url, key });
      await gate.held();
      const closed = closing.close();
      gate.open();
      expect((await inFlight).status).toBe(200);
      await closed;
      await expect(fetch(`${closing.url}/v1.0/account`)).rejects.toThrow();
      expect(existsSync(path.join(closingDir, 'serve.lock'))).toBe(false);
    } finally {
      gate.open();
      gate.remove();
    }
  });
});

async function creditsLeft(dir = dataDir): Promise<number> {
  const store = await openStore(dir);
  try {
    return (await store.balance((await store.listKeys())[0]!.accountId)).total;
  } finally {
    await store.close();
  }
}
