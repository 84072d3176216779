// `rmbg models pull NAME` against a release site of the test's own (test/helpers/release-server.ts), with the
// catalogue replaced through RMBG_MODEL_CATALOGUE by entries that point at it. The model is a real ONNX file: a
// 1×1 convolution of the red channel (64×48 input, mean 215, std 25 on 0–255), so a photo of two flat halves,
// red 230 and red 220, gives raw masks 0.6 and 0.2; rembg's min-max stretch, which the catalogue entry asks for,
// turns them into 1 and 0: an opaque left half and a transparent right half by name, through `remove --local`,
// `serve` and the library.

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CatalogueModel } from '../../src/engine/model/catalogue.js';
import { createRmbg } from '../../src/library/rmbg.js';
import { ensureBuilt, HAS_SCRIPT, removeTempDirs, rmbg, rmbgOnTerminal, tempDir } from '../helpers/cli.js';
import { type ConnectProxy, startConnectProxy } from '../helpers/connect-proxy.js';
import { writeRedChannelModel } from '../helpers/onnx-writer.js';
import { type ReleaseServer, startReleaseServer } from '../helpers/release-server.js';
import { call, createKey, startServe } from '../helpers/serve-harness.js';

const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

let work: string;
let release: ReleaseServer;
let proxy: ConnectProxy;
let modelBytes: Buffer;
let otherBytes: Buffer;
let photo: string;
let catalogueFile: string;

function entry(name: string, file: string, bytes: Buffer, extra: Partial<CatalogueModel> = {}): CatalogueModel {
  return {
    name,
    file,
    url: `${release.url}/${file}`,
    approxBytes: bytes.length,
    pin: { algorithm: 'md5', hex: md5(bytes) },
    licence: 'MIT (a test model)',
    preset: 'u2net',
    contract: {
      input: { shape: [1, 3, 48, 64] },
      normalization: { mean: [215, 215, 215], std: [25, 25, 25], range: '0-255' },
      activation: 'none',
      stretch: 'min-max',
    },
    version: 'test',
    checkedAgainst: 'the test',
    ...extra,
  };
}

/** A fresh data directory, and the environment of a run that uses it with the test's catalogue and no proxy. */
function freshData(extra: Record<string, string | undefined> = {}) {
  const dataDir = tempDir('rmbg-pull-');
  const env = {
    RMBG_DATA_DIR: dataDir,
    XDG_CACHE_HOME: path.join(dataDir, 'cache'),
    RMBG_MODEL_CATALOGUE: catalogueFile,
    HTTP_PROXY: undefined,
    HTTPS_PROXY: undefined,
    http_proxy: undefined,
    https_proxy: undefined,
    NO_PROXY: undefined,
    no_proxy: undefined,
    ...extra,
  };
  return { dataDir, modelsDir: path.join(dataDir, 'models'), env };
}

const registry = (modelsDir: string) =>
  existsSync(path.join(modelsDir, 'models.json'))
    ? (JSON.parse(readFileSync(path.join(modelsDir, 'models.json'), 'utf8')) as { models: { name: string }[] }).models
    : [];

/** The alpha at the middle of the left and of the right half. */
async function halvesAlpha(png: Buffer | string): Promise<[number, number]> {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (x: number) => data[(Math.floor(info.height / 2) * info.width + x) * info.channels + 3] as number;
  return [at(Math.floor(info.width / 4)), at(Math.floor((info.width * 3) / 4))];
}

beforeAll(async () => {
  ensureBuilt();
  work = tempDir('rmbg-pull-work-');
  const modelFile = path.join(work, 'tiny.onnx');
  writeRedChannelModel(modelFile, { width: 64, height: 48, bias: 0 });
  modelBytes = readFileSync(modelFile);
  writeRedChannelModel(path.join(work, 'other.onnx'), { width: 64, height: 48, bias: 0.01 });
  otherBytes = readFileSync(path.join(work, 'other.onnx'));
  release = await startReleaseServer({ 'tiny-v1.onnx': modelBytes, 'mirror/tiny-v1.onnx': modelBytes });
  proxy = await startConnectProxy();
  const half = (r: number) =>
    sharp({ create: { width: 100, height: 100, channels: 3, background: { r, g: 90, b: 60 } } })
      .png()
      .toBuffer();
  photo = path.join(work, 'halves.png');
  await sharp({ create: { width: 200, height: 100, channels: 3, background: '#000' } })
    .composite([
      { input: await half(230), left: 0, top: 0 },
      { input: await half(220), left: 100, top: 0 },
    ])
    .png()
    .toFile(photo);
  catalogueFile = path.join(work, 'catalogue.json');
  writeFileSync(
    catalogueFile,
    JSON.stringify([
      entry('tiny', 'tiny-v1.onnx', modelBytes),
      entry('tiny-nc', 'tiny-v1.onnx', modelBytes, {
        licence: 'CC-BY-NC-4.0 (a test model)',
        licenceGate: 'CC-BY-NC-4.0',
      }),
      entry('tiny-wrong', 'tiny-v1.onnx', otherBytes),
      entry('tiny-moving', 'tiny-moving.onnx', otherBytes),
      entry('tiny-offline', 'tiny-v1.onnx', modelBytes, { url: 'http://127.0.0.1:9/tiny-v1.onnx' }),
    ]),
  );
});

afterAll(async () => {
  await release?.close();
  await proxy?.close();
  removeTempDirs();
});

describe('rmbg models pull', () => {
  // One data directory through the model's life: not pulled, pulled after a cut, used by name, timed, removed.
  const life = { dataDir: '', modelsDir: '', env: {} as Record<string, string | undefined> };
  beforeAll(() => Object.assign(life, freshData()));

  it('lists a catalogue model not pulled yet, and `remove --model` names the command that pulls it', async () => {
    const list = await rmbg(['models', 'list', '--json'], { env: life.env });
    expect(list.exitCode).toBe(0);
    const row = (JSON.parse(list.stdout) as Record<string, unknown>[]).find((r) => r.name === 'tiny');
    expect(row).toMatchObject({
      status: 'not-pulled',
      bytes: modelBytes.length,
      licence: 'MIT (a test model)',
      pull: 'rmbg models pull tiny',
    });

    const removed = await rmbg(['remove', photo, '--local', '--model', 'tiny', '-o', path.join(work, 'none')], {
      env: life.env,
    });
    expect(removed.exitCode).toBe(2);
    expect(removed.stderr).toContain('run: rmbg models pull tiny (model_not_pulled)');
  });

  it('resumes a download cut in the middle with a Range request, then installs the verified file', async () => {
    const cut = Math.floor(modelBytes.length / 2);
    release.cutNextAfter(cut);
    const first = await rmbg(['models', 'pull', 'tiny'], { env: life.env });
    expect(first.exitCode).toBe(1);
    expect(first.stderr).toContain('run the same command again to resume');
    const part = path.join(life.modelsDir, 'tiny.onnx.part');
    expect(statSync(part).size).toBe(cut);
    expect(existsSync(path.join(life.modelsDir, 'tiny.onnx'))).toBe(false);

    const seen = release.requests.length;
    const second = await rmbg(['models', 'pull', 'tiny'], { env: life.env });
    expect(second.stderr).toContain(`rmbg: resuming tiny at`);
    expect(second.exitCode).toBe(0);
    expect(release.requests.slice(seen)).toEqual([
      { path: '/tiny-v1.onnx', range: `bytes=${cut}-`, ifRange: expect.stringMatching(/^".+"$/) },
    ]);
    // Without a terminal: progress as lines, the last at 100 %.
    expect(second.stderr).toMatch(/rmbg: pulling tiny: [\d.]+ of [\d.]+ MB \(100%\)/);
    expect(readFileSync(path.join(life.modelsDir, 'tiny.onnx')).equals(modelBytes)).toBe(true);
    expect(existsSync(part)).toBe(false);
    expect(registry(life.modelsDir)).toEqual([
      expect.objectContaining({ name: 'tiny', sha256: sha256(modelBytes), bytes: modelBytes.length }),
    ]);

    const again = await rmbg(['models', 'pull', 'tiny'], { env: life.env });
    expect(again.exitCode).toBe(0);
    expect(again.stderr).toContain('rmbg: tiny is already pulled and verified');
    expect(release.requests.length).toBe(seen + 1);
  });

  it('cuts out a photo by name through `rmbg remove --local`, and records its time per photo', async () => {
    const out = path.join(work, 'cli-out');
    const removed = await rmbg(['remove', photo, '--local', '--model', 'tiny', '-o', out, '--json'], {
      env: life.env,
    });
    expect(removed.exitCode).toBe(0);
    expect(await halvesAlpha(path.join(out, 'halves.png'))).toEqual([255, 0]);

    const list = await rmbg(['models', 'list', '--json'], { env: life.env });
    const row = (JSON.parse(list.stdout) as Record<string, unknown>[]).find((r) => r.name === 'tiny');
    expect(row).toMatchObject({ kind: 'pulled', status: 'verified', licence: 'MIT (a test model)' });
    expect(row?.timings).toEqual({ cpu: expect.objectContaining({ photos: 1, msPerPhoto: expect.any(Number) }) });
  });

  it('cuts out a photo by name through `rmbg serve --model`', async () => {
    const served = await startServe(life.dataDir, ['--model', 'tiny'], {
      XDG_CACHE_HOME: path.join(life.dataDir, 'cache'),
    });
    try {
      const { key } = await createKey(life.dataDir);
      const form = new FormData();
      form.append('image_file', new Blob([new Uint8Array(readFileSync(photo))]), 'halves.png');
      form.append('format', 'png');
      const answer = await call(`${served.url}/v1.0/removebg`, {
        method: 'POST',
        headers: { 'X-API-Key': key },
        body: form,
      });
      expect(answer.status).toBe(200);
      expect(await halvesAlpha(answer.body)).toEqual([255, 0]);
    } finally {
      await served.stop();
    }
  });

  it("cuts out a photo by name through the library's removeBackground", async () => {
    const saved = process.env.RMBG_DATA_DIR;
    process.env.RMBG_DATA_DIR = life.dataDir;
    const library = createRmbg();
    try {
      const result = await library.removeBackground(photo, { model: 'tiny', format: 'png' });
      expect(await halvesAlpha(result.data)).toEqual([255, 0]);
    } finally {
      await library.close();
      if (saved === undefined) delete process.env.RMBG_DATA_DIR;
      else process.env.RMBG_DATA_DIR = saved;
    }
  });

  it('`models remove` deletes a pulled model, which the list then shows as not pulled', async () => {
    const removed = await rmbg(['models', 'remove', 'tiny'], { env: life.env });
    expect(removed.exitCode).toBe(0);
    expect(existsSync(path.join(life.modelsDir, 'tiny.onnx'))).toBe(false);
    const list = await rmbg(['models', 'list', '--json'], { env: life.env });
    const row = (JSON.parse(list.stdout) as Record<string, unknown>[]).find((r) => r.name === 'tiny');
    expect(row?.status).toBe('not-pulled');
  });

  it.runIf(HAS_SCRIPT)(
    'at a terminal, `remove --model NAME` asks to pull a model not pulled yet, and pulls it on yes',
    async () => {
      const { modelsDir, env } = freshData();
      const out = path.join(work, 'asked-out');
      const declined = await rmbgOnTerminal(['remove', photo, '--local', '--model', 'tiny', '-o', out], {
        env,
        input: 'n\n',
      });
      expect(declined.stdout).toContain(
        `model tiny is not pulled yet: pull it now? (about 0 MB, MIT (a test model)) [y/N]`,
      );
      expect(declined.stdout).toContain('run: rmbg models pull tiny (model_not_pulled)');
      expect(declined.exitCode).toBe(2);

      const accepted = await rmbgOnTerminal(['remove', photo, '--local', '--model', 'tiny', '-o', out], {
        env,
        input: 'y\n',
      });
      expect(accepted.stdout).toMatch(/ tiny .+ 100% \| [\d.]+ of [\d.]+ MB \| [\d.]+ MB\/s \| /); // the bar
      expect(accepted.stdout).toContain('rmbg: pulled tiny');
      expect(accepted.exitCode).toBe(0);
      expect(registry(modelsDir).map((m) => m.name)).toEqual(['tiny']);
      expect(await halvesAlpha(path.join(out, 'halves.png'))).toEqual([255, 0]);
    },
  );

  it('refuses a file whose hash is not the pinned one: nothing installed, the partial removed', async () => {
    const { modelsDir, env } = freshData();
    const pulled = await rmbg(['models', 'pull', 'tiny-wrong'], { env });
    expect(pulled.exitCode).toBe(1);
    expect(pulled.stderr).toContain(`expected ${md5(otherBytes)}, got ${md5(modelBytes)}`);
    expect(pulled.stderr).toContain('nothing was installed and the partial download was removed (model_unavailable)');
    expect(readdirSync(modelsDir).filter((f) => f.startsWith('tiny-wrong'))).toEqual([]);
    expect(registry(modelsDir)).toEqual([]);
  });

  it('starts over when the file changed on the server since the partial download (If-Range)', async () => {
    const { modelsDir, env } = freshData();
    release.put('tiny-moving.onnx', modelBytes);
    release.cutNextAfter(10);
    expect((await rmbg(['models', 'pull', 'tiny-moving'], { env })).exitCode).toBe(1);
    release.put('tiny-moving.onnx', otherBytes); // a new version: what the catalogue pins
    const seen = release.requests.length;
    const pulled = await rmbg(['models', 'pull', 'tiny-moving'], { env });
    expect(pulled.exitCode).toBe(0);
    expect(release.requests[seen]?.range).toBe('bytes=10-');
    expect(readFileSync(path.join(modelsDir, 'tiny-moving.onnx')).equals(otherBytes)).toBe(true);
  });

  it('pulls a non-commercial model only with --accept-licence', async () => {
    const { modelsDir, env } = freshData();
    const refused = await rmbg(['models', 'pull', 'tiny-nc'], { env });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('rmbg models pull tiny-nc --accept-licence CC-BY-NC-4.0 (usage_error)');
    expect(existsSync(modelsDir)).toBe(false);

    const accepted = await rmbg(['models', 'pull', 'tiny-nc', '--accept-licence', 'CC-BY-NC-4.0'], { env });
    expect(accepted.exitCode).toBe(0);
    expect(registry(modelsDir).map((m) => m.name)).toEqual(['tiny-nc']);
  });

  it('goes through HTTPS_PROXY / HTTP_PROXY, and not for a host NO_PROXY names', async () => {
    const through = freshData({ HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url });
    const before = proxy.tunnels.length;
    expect((await rmbg(['models', 'pull', 'tiny'], { env: through.env })).exitCode).toBe(0);
    expect(proxy.tunnels.slice(before)).toEqual([new URL(release.url).host]);

    const bypass = freshData({ HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' });
    const after = proxy.tunnels.length;
    expect((await rmbg(['models', 'pull', 'tiny'], { env: bypass.env })).exitCode).toBe(0);
    expect(proxy.tunnels.length).toBe(after);
    expect(registry(bypass.modelsDir).map((m) => m.name)).toEqual(['tiny']);
  });

  it('--from DIR copies from a local folder and --from URL downloads from a mirror, not the publisher', async () => {
    const folder = path.join(work, 'usb');
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, 'tiny-v1.onnx'), modelBytes);
    const fromDir = freshData();
    const seen = release.requests.length;
    const copied = await rmbg(['models', 'pull', 'tiny-offline', '--from', folder], { env: fromDir.env });
    expect(copied.exitCode).toBe(0);
    expect(release.requests.length).toBe(seen);
    expect(readFileSync(path.join(fromDir.modelsDir, 'tiny-offline.onnx')).equals(modelBytes)).toBe(true);

    const fromUrl = freshData();
    const mirrored = await rmbg(['models', 'pull', 'tiny-offline', '--from', `${release.url}/mirror/`], {
      env: fromUrl.env,
    });
    expect(mirrored.exitCode).toBe(0);
    expect(release.requests.slice(seen).map((r) => r.path)).toEqual(['/mirror/tiny-v1.onnx']);
    expect(registry(fromUrl.modelsDir).map((m) => m.name)).toEqual(['tiny-offline']);
  });
});

describe('rmbg models pull, run twice at once or over what an earlier pull left', () => {
  it('three pulls of one model at once: one downloads, the others wait for it; the right bytes, listed', async () => {
    const { modelsDir, env } = freshData();
    const seen = release.requests.length;
    const release_ = release.hold();
    const pulls = [1, 2, 3].map(() => rmbg(['models', 'pull', 'tiny'], { env }));
    let stderr = ['', '', ''];
    for (const [i, pull] of pulls.entries())
      pull.stderr?.on('data', (chunk: Buffer) => {
        stderr[i] += chunk.toString();
      });
    const waiting = () => stderr.filter((said) => said.includes('rmbg: another pull of tiny is running (pid ')).length;
    // Until one download and two waits are seen (or, without a lock, three downloads).
    await expect.poll(() => release.requests.length - seen + waiting(), { timeout: 60_000 }).toBe(3);
    release_();
    const results = await Promise.all(pulls);
    stderr = results.map((result) => result.stderr);
    expect(results.map((result) => result.exitCode)).toEqual([0, 0, 0]);
    expect(release.requests.length - seen).toBe(1);
    expect(waiting()).toBe(2);
    expect(stderr.filter((said) => said.includes('rmbg: tiny is already pulled and verified'))).toHaveLength(2);
    expect(readFileSync(path.join(modelsDir, 'tiny.onnx')).equals(modelBytes)).toBe(true);
    expect(readdirSync(modelsDir).sort()).toEqual(['models.json', 'tiny.onnx', 'tiny.onnx.verified']);
    const list = await rmbg(['models', 'list', '--json'], { env });
    const row = (JSON.parse(list.stdout) as { name: string; status: string }[]).find((r) => r.name === 'tiny');
    expect(row?.status).toBe('verified');
  });

  it('a complete partial file (416 on its resume) is checked and installed, not downloaded again', async () => {
    const { modelsDir, env } = freshData();
    mkdirSync(modelsDir, { recursive: true });
    const part = path.join(modelsDir, 'tiny.onnx.part');
    writeFileSync(part, modelBytes);
    writeFileSync(`${part}.json`, JSON.stringify({ url: `${release.url}/tiny-v1.onnx` }));
    const seen = release.requests.length;
    const pulled = await rmbg(['models', 'pull', 'tiny'], { env });
    expect(pulled.exitCode, pulled.stderr).toBe(0);
    expect(release.requests.slice(seen)).toEqual([
      { path: '/tiny-v1.onnx', range: `bytes=${modelBytes.length}-`, ifRange: undefined },
    ]);
    expect(readFileSync(path.join(modelsDir, 'tiny.onnx')).equals(modelBytes)).toBe(true);
    expect(existsSync(part)).toBe(false);
  });
});

describe('RMBG_MODEL_CATALOGUE entries are checked', () => {
  /** A data directory two folders down in a folder of the test's own (where a name of ../../x would land), and the
   * environment of a run with `models` as the catalogue. */
  const withCatalogue = (models: unknown[]) => {
    const root = tempDir('rmbg-catalogue-');
    const file = path.join(root, 'catalogue.json');
    writeFileSync(file, JSON.stringify(models));
    const { env } = freshData({ RMBG_DATA_DIR: path.join(root, 'a', 'data'), RMBG_MODEL_CATALOGUE: file });
    return { root, file, env };
  };
  const filesUnder = (root: string) =>
    readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((found) => found.isFile())
      .map((found) => path.relative(root, path.join(found.parentPath, found.name)));

  it.each([
    ['a name with ../', { name: '../../escaped' }, "'../../escaped': name must be 1-64 letters"],
    ['a file with ../', { file: '../../tiny-v1.onnx' }, "'escaped': file must be a file name"],
  ])('%s is refused (exit 2) and nothing is written', async (_, change, said) => {
    const { root, file, env } = withCatalogue([{ ...entry('escaped', 'tiny-v1.onnx', modelBytes), ...change }]);
    const pulled = await rmbg(['models', 'pull', (change as { name?: string }).name ?? 'escaped'], { env });
    expect(pulled.exitCode).toBe(2);
    expect(pulled.stderr).toContain(`RMBG_MODEL_CATALOGUE=${file}: ${said}`);
    expect(filesUnder(root)).toEqual(['catalogue.json']);
  });

  it('an entry without its pin gives a clear error (exit 2), not a TypeError', async () => {
    const { pin: _, ...pinless } = entry('tiny', 'tiny-v1.onnx', modelBytes);
    const { env } = withCatalogue([pinless]);
    const pulled = await rmbg(['models', 'pull', 'tiny'], { env });
    expect(pulled.exitCode).toBe(2);
    expect(pulled.stderr).toContain(`'tiny': pin must be { "algorithm": "md5" | "sha256", "hex": the hash in hex }`);
    expect(pulled.stderr).not.toContain('TypeError');
  });
});
