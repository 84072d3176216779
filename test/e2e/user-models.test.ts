// Bring-your-own models: `rmbg models add NAME FILE --preset …` registers a user's ONNX file with its contract,
// and `--model NAME` then runs it for `remove --local` and `serve`. The models are written by the test: a 1×1
// convolution whose mask is the red channel of the normalised input plus a bias, so each contract (input size,
// mean/std, 0–1 or 0–255 scale, sigmoid or not) gives alpha values the test computes on its own.

import {
  appendFileSync,
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeRedChannelModel } from '../helpers/onnx-writer.js';
import { ensureBuilt, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { balance, call, createKey, startServe } from '../helpers/serve-harness.js';

const IMAGENET = { mean: 0.485, std: 0.229 }; // red channel
const HALF = { mean: 0.5, std: 1 };
const RED_LEFT = 200;
const RED_RIGHT = 150;

interface Case {
  name: string;
  flags: string[];
  size: { width: number; height: number };
  bias: number;
  /** The mask value for a red byte r, from the family's published preprocessing. */
  mask: (r: number) => number;
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const CASES: Case[] = [
  {
    name: 'isnet',
    flags: ['--preset', 'isnet'],
    size: { width: 1024, height: 1024 },
    bias: 0.5,
    mask: (r) => (r / 255 - HALF.mean) / HALF.std + 0.5,
  },
  {
    name: 'bria',
    flags: ['--preset', 'bria'],
    size: { width: 1024, height: 1024 },
    bias: 0.25,
    mask: (r) => (r / 255 - HALF.mean) / HALF.std + 0.25,
  },
  {
    name: 'birefnet',
    flags: ['--preset', 'birefnet'],
    size: { width: 1024, height: 1024 },
    bias: 0,
    mask: (r) => sigmoid((r / 255 - IMAGENET.mean) / IMAGENET.std),
  },
  {
    name: 'u2net',
    flags: ['--preset', 'u2net'],
    size: { width: 320, height: 320 },
    bias: 0,
    mask: (r) => (r / 255 - IMAGENET.mean) / IMAGENET.std,
  },
  {
    name: 'explicit',
    flags: ['--input-size', '64x48', '--mean', '0', '--std', '255', '--range', '0-255', '--activation', 'none'],
    size: { width: 64, height: 48 },
    bias: 0,
    mask: (r) => r / 255,
  },
];

/** The engine's mask byte for a model output value (clamped to 0..1, rounded). */
const alphaOf = (value: number) => (value <= 0 ? 0 : value >= 1 ? 255 : Math.floor(value * 255 + 0.5));

let work: string;
let dataDir: string;
let photo: string;
// Own data and cache folders: nothing of these generated models lands in the user's folders.
const env = () => ({ env: { RMBG_DATA_DIR: dataDir, XDG_CACHE_HOME: path.join(work, 'cache') }, cwd: work });

beforeAll(async () => {
  ensureBuilt();
  work = tempDir();
  dataDir = path.join(work, 'data');
  // Two halves: red 200 on the left, red 150 on the right; green and blue differ too, and must not matter.
  const half = (r: number, g: number, b: number) =>
    sharp({ create: { width: 100, height: 100, channels: 3, background: { r, g, b } } })
      .png()
      .toBuffer();
  photo = path.join(work, 'halves.png');
  await sharp({ create: { width: 200, height: 100, channels: 3, background: '#000' } })
    .composite([
      { input: await half(RED_LEFT, 10, 250), left: 0, top: 0 },
      { input: await half(RED_RIGHT, 240, 5), left: 100, top: 0 },
    ])
    .png()
    .toFile(photo);
  for (const c of CASES) writeRedChannelModel(path.join(work, `${c.name}.onnx`), { ...c.size, bias: c.bias });
});

afterAll(removeTempDirs);

async function alphaAt(file: string, x: number, y: number): Promise<number> {
  const { data, info } = await sharp(file).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return data[(y * info.width + x) * info.channels + 3] as number;
}

describe('rmbg models add NAME FILE: a user model runs with its contract', () => {
  it.each(CASES)(
    '$name: added, listed as verified, and `remove --local --model` gives the alpha its contract implies',
    async (c) => {
      const added = await rmbg(['models', 'add', `my-${c.name}`, `${c.name}.onnx`, ...c.flags], env());
      expect(added.stderr).toBe('');
      expect(added.exitCode).toBe(0);
      expect(added.stdout).toContain(`added model my-${c.name}`);

      const out = path.join(work, `out-${c.name}`);
      const removed = await rmbg(
        ['remove', photo, '--local', '--model', `my-${c.name}`, '-o', out, '--format', 'png', '--json'],
        env(),
      );
      expect(removed.exitCode).toBe(0);
      const result = path.join(out, 'halves.png');
      expect(await sharp(result).metadata()).toMatchObject({ width: 200, height: 100, channels: 4 });
      // Centres of the two halves: the mask there is the contract's function of the red byte (±1 for float rounding).
      expect(Math.abs((await alphaAt(result, 50, 50)) - alphaOf(c.mask(RED_LEFT)))).toBeLessThanOrEqual(1);
      expect(Math.abs((await alphaAt(result, 150, 50)) - alphaOf(c.mask(RED_RIGHT)))).toBeLessThanOrEqual(1);
    },
  );

  it('lists the added models with their contract, next to the built-in ones', async () => {
    const listed = await rmbg(['models', 'list', '--json'], env());
    expect(listed.exitCode).toBe(0);
    const rows = JSON.parse(listed.stdout) as Array<{
      name: string;
      kind: string;
      status: string;
      contract?: string;
      default: boolean;
    }>;
    expect(rows.find((r) => r.default)).toMatchObject({ kind: 'built-in' });
    expect(rows.find((r) => r.name === 'my-birefnet')).toMatchObject({
      kind: 'user',
      status: 'verified',
      contract: expect.stringContaining('activation sigmoid'),
    });
    expect(rows.find((r) => r.name === 'my-explicit')).toMatchObject({
      contract: expect.stringContaining('input 64×48'),
    });
  });

  it('`rmbg serve --model NAME` answers with the user model', async () => {
    const server = await startServe(dataDir, ['--model', 'my-isnet'], { XDG_CACHE_HOME: path.join(work, 'cache') });
    try {
      const { key } = await createKey(dataDir, 2);
      const form = new FormData();
      form.append('image_file', new Blob([new Uint8Array(await sharp(photo).toBuffer())]), 'halves.png');
      form.append('format', 'png');
      form.append('size', 'full');
      const answer = await call(`${server.url}/v1.0/removebg`, {
        method: 'POST',
        body: form,
        headers: { 'X-API-Key': key },
      });
      expect(answer.status).toBe(200);
      const file = path.join(work, 'served.png');
      await sharp(answer.body).toFile(file);
      expect(await alphaAt(file, 50, 50)).toBe(alphaOf(RED_LEFT / 255));
      expect(await alphaAt(file, 150, 50)).toBe(alphaOf(RED_RIGHT / 255));
      expect(await balance(server.url, key)).toMatchObject({ total: 1 });
    } finally {
      await server.stop();
    }
  });

  it('a copy changed after it was added is refused by its sha256, whether its size changed or not; no output is written', async () => {
    await rmbg(['models', 'add', 'tampered', 'isnet.onnx', '--preset', 'isnet'], env());
    const copy = path.join(dataDir, 'models', 'tampered.onnx');
    const runIt = (out: string) =>
      rmbg(['remove', photo, '--local', '--model', 'tampered', '-o', path.join(work, out), '--json'], env());
    expect((await runIt('ok')).exitCode).toBe(0);

    // Same size, one byte changed (the verify stamp must not vouch for it: the mtime moved).
    const fd = openSync(copy, 'r+');
    writeSync(fd, Buffer.from([0x42]), 0, 1, 20);
    closeSync(fd);
    const sameSize = await runIt('same-size');
    expect(sameSize.exitCode).toBe(1);
    expect(sameSize.stderr).toMatch(/tampered .* does not match its recorded sha256.*\(model_unavailable\)/);
    expect(existsSync(path.join(work, 'same-size', 'halves.png'))).toBe(false);

    appendFileSync(copy, 'x');
    const longer = await runIt('longer');
    expect(longer.exitCode).toBe(1);
    expect(longer.stderr).toContain('does not match its recorded sha256');
  });

  it('refuses what it cannot use, with a usage error that says what is allowed', async () => {
    const noContract = await rmbg(['models', 'add', 'bare', 'isnet.onnx'], env());
    expect(noContract.exitCode).toBe(2);
    expect(noContract.stderr).toMatch(/--preset isnet\|birefnet\|u2net\|bria.*--input-size, --mean, --std/);

    const wrongOutput = await rmbg(
      ['models', 'add', 'named', 'isnet.onnx', '--preset', 'isnet', '--output', 'alpha'],
      env(),
    );
    expect(wrongOutput.exitCode).toBe(2);
    expect(wrongOutput.stderr).toContain("has no output 'alpha' (outputs: mask)");

    const badMean = await rmbg(['models', 'add', 'means', 'isnet.onnx', '--preset', 'u2net', '--mean', '1,2'], env());
    expect(badMean.exitCode).toBe(2);
    expect(badMean.stderr).toContain('--mean takes one number or three');

    const builtIn = await rmbg(['models', 'add', 'isnet-medium', 'isnet.onnx', '--preset', 'isnet'], env());
    expect(builtIn.exitCode).toBe(2);
    expect(builtIn.stderr).toContain('is a built-in model');

    const notOnnx = await rmbg(['models', 'add', 'picture', photo, '--preset', 'isnet'], env());
    expect(notOnnx.exitCode).toBe(1);
    expect(notOnnx.stderr).toContain('(model_unavailable)');

    const listed = JSON.parse((await rmbg(['models', 'list', '--json'], env())).stdout) as Array<{ name: string }>;
    expect(listed.map((r) => r.name)).not.toEqual(expect.arrayContaining(['bare', 'named', 'means', 'picture']));
  });

  it("keeps ORT's optimised graph in the user cache folder, reuses it with the same result, replaces a broken one, removes an abandoned one and an old ONNX copy", async () => {
    const cache = path.join(work, 'xdg-cache');
    const graphs = path.join(cache, 'rmbg', 'graphs');
    const withCache = { env: { RMBG_DATA_DIR: dataDir, XDG_CACHE_HOME: cache }, cwd: work };
    expect((await rmbg(['models', 'add', 'cached', 'birefnet.onnx', '--preset', 'birefnet'], env())).exitCode).toBe(0);
    const runIt = (out: string) =>
      rmbg(['remove', photo, '--local', '--model', 'cached', '-o', path.join(work, out), '--format', 'png'], withCache);
    expect((await runIt('cache-1')).exitCode).toBe(0);
    const files = readdirSync(graphs);
    expect(files).toHaveLength(1);
    // Keyed by the model's sha256, the onnxruntime version, the provider and this CPU.
    expect(files[0]).toMatch(/^[0-9a-f]{16}-ort[\d.]+-cpu-[0-9a-f]{8}\.ort$/);

    expect((await runIt('cache-2')).exitCode).toBe(0);
    const first = readFileSync(path.join(work, 'cache-1', 'halves.png'));
    expect(readFileSync(path.join(work, 'cache-2', 'halves.png')).equals(first)).toBe(true);

    writeFileSync(path.join(graphs, files[0] as string), 'not a graph');
    expect((await runIt('cache-3')).exitCode).toBe(0);
    expect(readFileSync(path.join(work, 'cache-3', 'halves.png')).equals(first)).toBe(true);
    // A graph half-written by a process that died (no such pid) is removed when the graph is made again.
    const abandoned = path.join(graphs, `${files[0]}.4194303.tmp`);
    writeFileSync(abandoned, 'half');
    // So are the same graph as ONNX, which rmbg cached before it kept ORT's own format, and the graph under the
    // name it had before the provider was part of it.
    const unkeyed = (files[0] as string).replace('-cpu-', '-');
    const oldFormat = path.join(graphs, unkeyed.replace(/\.ort$/, '.onnx'));
    const oldName = path.join(graphs, unkeyed);
    writeFileSync(oldFormat, 'old');
    writeFileSync(oldName, 'old');
    expect((await runIt('cache-4')).exitCode).toBe(0);
    expect(existsSync(oldFormat)).toBe(false);
    expect(existsSync(oldName)).toBe(false);
    expect(readFileSync(path.join(graphs, files[0] as string)).toString('latin1', 0, 11)).not.toBe('not a graph');
    expect(existsSync(abandoned)).toBe(false);
  });

  it('models remove forgets a model and deletes its copy; --model NAME is then unknown', async () => {
    await rmbg(['models', 'add', 'gone', 'isnet.onnx', '--preset', 'isnet'], env());
    const removed = await rmbg(['models', 'remove', 'gone'], env());
    expect(removed.exitCode).toBe(0);
    expect(existsSync(path.join(dataDir, 'models', 'gone.onnx'))).toBe(false);
    const after = await rmbg(['remove', photo, '--local', '--model', 'gone', '-o', path.join(work, 'gone-out')], env());
    expect(after.exitCode).toBe(2);
    expect(after.stderr).toContain("unknown model 'gone'");
    expect((await rmbg(['models', 'remove', 'gone'], env())).exitCode).toBe(2);
  });
});

describe('the registry of user models, changed by several commands at once', () => {
  it('six `models add` at once: each one recorded, all six listed', async () => {
    const shared = { env: { RMBG_DATA_DIR: tempDir(), XDG_CACHE_HOME: path.join(work, 'cache') }, cwd: work };
    const names = ['one', 'two', 'three', 'four', 'five', 'six'];
    const added = await Promise.all(
      names.map((name) => rmbg(['models', 'add', name, 'isnet.onnx', '--preset', 'isnet'], shared)),
    );
    expect(added.map((result) => result.exitCode)).toEqual(names.map(() => 0));
    const list = await rmbg(['models', 'list', '--json'], shared);
    const listed = (JSON.parse(list.stdout) as { name: string }[]).map((row) => row.name);
    expect(listed).toEqual(expect.arrayContaining(names));
  });
});
