// Every cutout's confidence where a user meets it, and what a batch does with it: the --json lines, the journal (a
// resumed batch keeps it), the summary's count of cutouts to check, review.html opened from file:// in Chromium
// (least confident first, images loaded, a hostile file name shown as text), --retry-review running only the
// flagged cutouts with another model (refused through a server), review.html only when a cutout is flagged or
// --review-page asks, and the confidence through a server (X-Confidence, not in the JSON result; a remote batch) and
// the library. The warm-key model (test/helpers/fast-models.ts) gives known masks in milliseconds; the
// real model's ordering is test/integration/engine/confidence-real-model.test.ts.

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRmbg, createServer, type RmbgServer } from '../../src/index.js';
import { openStore } from '../../src/store/index.js';
import { SPEC_RESULT_FIELDS } from '../helpers/api-answers.js';
import { launchBrowser, SCREENSHOTS } from '../helpers/browser-harness.js';
import { ensureBuilt, HAS_SCRIPT, jsonLines, removeTempDirs, rmbg, rmbgOnTerminal, tempDir } from '../helpers/cli.js';
import { warmKeyModel } from '../helpers/fast-models.js';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { writeRedChannelModel } from '../helpers/onnx-writer.js';
import { JOURNAL, writeTree } from '../helpers/remove-local-files.js';

/** A name that breaks out of an attribute, opens a tag, and holds every character a URL treats specially. */
const HOSTILE = `"><img src=x onerror="document.title='pwned'"> & 'it's' #1?%20.jpg`;
const WARM = warmKeyModel();

/** A flat photo, and one with a disc: svg through sharp, as JPEG. */
function photo(background: string, disc?: string): Promise<Buffer> {
  const circle = disc ? `<circle cx="160" cy="120" r="70" fill="${disc}"/>` : '';
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="240"><rect width="100%" height="100%" fill="${background}"/>${circle}</svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 95 }).toBuffer();
}

let inputs: string;
let work: string;
let browser: Browser | undefined;

beforeAll(async () => {
  ensureBuilt();
  work = tempDir();
  inputs = path.join(work, 'in');
  const clear = await jpegPhoto(320, 240);
  writeTree(inputs, {
    // The warm-key model keeps red − blue ≥ 64 whole and removes red − blue ≤ 32: a clear disc, a disc halfway
    // (red − blue = 48, alpha 0.5: all of it ambiguous), and nothing at all.
    'clear.jpg': clear,
    'blended.jpg': await photo('#cedeec', '#d09098'),
    'empty.jpg': await photo('#cedeec'),
    [HOSTILE]: clear,
  });
});

afterAll(async () => {
  await browser?.close();
  removeTempDirs();
});

type FileLine = { input: string; output: string | null; status: string; reason?: string; confidence?: number };

const nameOf = (line: { input: string }) => path.basename(line.input);

async function removeJson(out: string, extra: string[] = []) {
  const result = await rmbg(['remove', inputs, '-o', out, '--local', '--model', WARM, '--json', ...extra]);
  const lines = jsonLines(result.stdout);
  const files = lines.filter((line) => !line.summary) as FileLine[];
  const confidences = Object.fromEntries(files.map((line) => [nameOf(line), line.confidence]));
  return { result, files, summary: lines.at(-1) as Record<string, unknown>, confidences };
}

function journalOf(out: string): Array<Record<string, unknown>> {
  return readFileSync(path.join(out, JOURNAL), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('a batch on this computer', () => {
  let out: string;
  let first: Awaited<ReturnType<typeof removeJson>>;

  beforeAll(async () => {
    out = path.join(work, 'out');
    first = await removeJson(out);
  });

  it('gives each cutout a confidence in its --json line, ordered as a person would', () => {
    expect(first.result.exitCode, first.result.stderr).toBe(0);
    const {
      'clear.jpg': clear,
      'blended.jpg': blended,
      'empty.jpg': empty,
    } = first.confidences as Record<string, number>;
    expect(clear).toBeGreaterThan(0.9);
    expect(blended).toBeGreaterThan(0);
    expect(blended).toBeLessThan(0.5);
    expect(empty).toBe(0);
    expect(first.confidences[HOSTILE]).toBe(clear);
  });

  it('counts the cutouts under --review-below in the summary, and names review.html', () => {
    expect(first.summary).toMatchObject({
      summary: true,
      done: 4,
      toReview: 2,
      reviewBelow: 0.5,
      reviewPage: path.join(out, 'review.html'),
    });
  });

  it('journals each confidence, and a resumed batch reports them from the journal', async () => {
    const done = journalOf(out).filter((record) => record.state === 'done');
    expect(
      Object.fromEntries(done.map((record) => [path.basename(record.input as string), record.confidence])),
    ).toEqual(first.confidences);
    const again = await removeJson(out);
    expect(again.result.exitCode, again.result.stderr).toBe(0);
    expect(again.files.map((line) => line.status)).toEqual(['skipped', 'skipped', 'skipped', 'skipped']);
    expect(again.confidences).toEqual(first.confidences);
    expect(again.summary).toMatchObject({ skipped: 4, toReview: 2 });
  });

  it.skipIf(!HAS_SCRIPT)('says at a terminal how many cutouts to check, and where', async () => {
    const run = await rmbgOnTerminal(['remove', inputs, '-o', out, '--local', '--model', WARM]);
    expect(run.exitCode, run.stdout).toBe(0);
    expect(run.stdout).toContain(
      `2 cutouts to check (confidence under 0.5), least confident first in ${path.join(out, 'review.html')}`,
    );
  });

  it('--review-below moves the threshold; a value outside 0..1 is refused', async () => {
    const strict = await removeJson(out, ['--review-below', '1']);
    expect(strict.summary).toMatchObject({ toReview: 4, reviewBelow: 1 });
    const bad = await rmbg(['remove', inputs, '-o', out, '--local', '--model', WARM, '--review-below', '1.5']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--review-below must be a number from 0 to 1');
    // Back to the default, so the page below is the default's.
    await removeJson(out);
  });

  it('writes review.html: flagged first, least confident first, images loaded, file names as text', async () => {
    browser ??= await launchBrowser();
    const page = await browser.newPage({ viewport: { width: 1100, height: 1000 } });
    const failed: string[] = [];
    page.on('requestfailed', (request) => failed.push(request.url()));
    await page.goto(pathToFileURL(path.join(out, 'review.html')).href);
    await page.waitForFunction(() => [...document.images].every((image) => image.complete));
    const rows = await page.$$eval('section.photo', (sections) =>
      sections.map((section) => ({
        confidence: Number(section.getAttribute('data-confidence')),
        flagged: section.classList.contains('flagged'),
        original: section.querySelector('.original figcaption')?.textContent,
        widths: [...section.querySelectorAll('img')].map((image) => image.naturalWidth),
      })),
    );
    expect(failed).toEqual([]);
    expect(rows.map((row) => [path.basename(row.original as string), row.confidence, row.flagged])).toEqual([
      ['empty.jpg', 0, true],
      ['blended.jpg', first.confidences['blended.jpg'], true],
      // Equal confidences keep the inputs' order ('"' sorts before 'c').
      [HOSTILE, first.confidences[HOSTILE], false],
      ['clear.jpg', first.confidences['clear.jpg'], false],
    ]);
    for (const row of rows) expect(row.widths, row.original as string).toEqual([320, 320]);
    // The hostile name is text: no element of its own, no script run.
    expect(await page.locator('img').count()).toBe(8);
    expect(await page.title()).toBe('rmbg review: 2 of 4 to check');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'review-page.png'), fullPage: true });
    await page.close();
  });

  it('--retry-review runs only the flagged cutouts again with another model, overwriting them, and says so', async () => {
    // The other model keeps everything: its cutouts are opaque, and its confidence is 1.
    const keepAll = path.join(work, 'keep-all.onnx');
    writeRedChannelModel(keepAll, { width: 1024, height: 1024, bias: 1.5, inputName: 'input', outputName: 'output' });
    const clearBefore = readFileSync(path.join(out, 'clear.png'));
    const needsModel = await rmbg(['remove', inputs, '-o', out, '--local', '--retry-review']);
    expect(needsModel.exitCode).toBe(2);
    expect(needsModel.stderr).toContain('give --model NAME');

    const retry = await rmbg(['remove', inputs, '-o', out, '--local', '--json', '--retry-review', '--model', keepAll]);
    expect(retry.exitCode, retry.stderr).toBe(0);
    expect(retry.stderr).toContain(
      `running the 2 flagged cutouts (confidence under 0.5) again with the model ${keepAll}, overwriting them`,
    );
    const lines = jsonLines(retry.stdout) as FileLine[];
    const byName = Object.fromEntries(lines.filter((line) => line.input).map((line) => [nameOf(line), line]));
    expect(byName['empty.jpg']).toMatchObject({ status: 'done', confidence: 1 });
    expect(byName['blended.jpg']).toMatchObject({ status: 'done', confidence: 1 });
    expect(byName['clear.jpg']).toMatchObject({ status: 'skipped', reason: 'not-flagged' });
    expect(jsonLines(retry.stdout).at(-1)).toMatchObject({ done: 2, skipped: 2, toReview: 0 });
    // The flagged cutouts are the other model's: nothing transparent, so the auto format made them JPGs in their
    // PNGs' place; the others are the bytes they were.
    for (const name of ['empty', 'blended']) {
      expect(byName[`${name}.jpg`]?.output).toBe(path.join(out, `${name}.jpg`));
      expect((await sharp(path.join(out, `${name}.jpg`)).metadata()).format).toBe('jpeg');
      expect(existsSync(path.join(out, `${name}.png`))).toBe(false);
    }
    expect(readFileSync(path.join(out, 'clear.png')).equals(clearBefore)).toBe(true);
    // Nothing is flagged now: a second retry runs nothing.
    const none = await rmbg(['remove', inputs, '-o', out, '--local', '--json', '--retry-review', '--model', keepAll]);
    expect(none.stderr).toContain('the journal flags no cutout of these inputs');
    expect(jsonLines(none.stdout).at(-1)).toMatchObject({ done: 0, skipped: 4 });
  });
});

describe('review.html only when a cutout is flagged, or asked for', () => {
  const clearPhoto = () => path.join(inputs, 'clear.jpg');
  const run = (out: string, extra: string[] = []) =>
    rmbg(['remove', clearPhoto(), '-o', out, '--local', '--model', WARM, '--json', ...extra]);

  it('one photo with nothing flagged leaves no page, and the summary names none', async () => {
    const out = path.join(work, 'one-clear');
    const result = await run(out);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ done: 1, toReview: 0, reviewPage: null });
    expect(existsSync(path.join(out, 'review.html'))).toBe(false);
  });

  it.skipIf(!HAS_SCRIPT)('says nothing of a page at a terminal when none is written', async () => {
    const out = path.join(work, 'one-clear-terminal');
    const result = await rmbgOnTerminal(['remove', clearPhoto(), '-o', out, '--local', '--model', WARM]);
    expect(result.exitCode, result.stdout).toBe(0);
    expect(result.stdout).toContain('1 done');
    expect(result.stdout).not.toContain('review.html');
    expect(existsSync(path.join(out, 'review.html'))).toBe(false);
  });

  it('--review-page writes it all the same, and the summary names it', async () => {
    const out = path.join(work, 'one-clear-asked');
    const result = await run(out, ['--review-page']);
    expect(result.exitCode, result.stderr).toBe(0);
    const page = path.join(out, 'review.html');
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ toReview: 0, reviewPage: page });
    expect(readFileSync(page, 'utf8')).toContain('<title>rmbg review: 0 of 1 to check</title>');
  });

  it("a run that flags nothing removes an earlier run's page, which told of other cutouts", async () => {
    const out = path.join(work, 'one-clear-after-asked');
    await run(out, ['--review-page']);
    const result = await run(out, ['--overwrite']);
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ done: 1, reviewPage: null });
    expect(existsSync(path.join(out, 'review.html'))).toBe(false);
  });
});

describe('through a server and the library', () => {
  let server: RmbgServer;
  let apiKey: string;
  const library = createRmbg();

  beforeAll(async () => {
    const dataDir = tempDir();
    const store = await openStore(dataDir);
    apiKey = (await store.createAccountWithKey({ plan: 'pro', credits: 20 })).key;
    await store.close();
    server = await createServer({ port: 0, dataDir, model: WARM });
  });

  afterAll(async () => {
    await server?.close();
    await library.close();
  });

  async function post(accept?: string): Promise<Response> {
    const form = new FormData();
    form.append('image_file', new Blob([new Uint8Array(readFileSync(path.join(inputs, 'blended.jpg')))]), 'b.jpg');
    return fetch(`${server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: { 'X-API-Key': apiKey, ...(accept && { Accept: accept }) },
      body: form,
    });
  }

  it("serve sends X-Confidence with the image and with the JSON result, which holds the spec's fields only", async () => {
    const image = await post();
    expect(image.status).toBe(200);
    const header = Number(image.headers.get('x-confidence'));
    expect(header).toBeGreaterThan(0);
    expect(header).toBeLessThan(0.5);
    const json = await post('application/json');
    expect(Number(json.headers.get('x-confidence'))).toBe(header);
    expect(Object.keys(((await json.json()) as { data: object }).data).sort()).toEqual([...SPEC_RESULT_FIELDS].sort());
  });

  it('--retry-review through a server is refused before anything is sent, and says what to do', async () => {
    // The CLI refuses it while reading its flags (a server runs its own model: --model is refused with it).
    const out = path.join(work, 'remote-retry');
    const refused = await rmbg(
      ['remove', inputs, '-o', out, '--api-url', server.url, '--retry-review', '--model', WARM],
      { env: { RMBG_API_KEY: apiKey } },
    );
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('--model applies on this computer only');
    // The library reaches the batch, whose remote remover says it cannot retry.
    const batch = library.removeBackgrounds(inputs, { apiUrl: server.url, apiKey, outDir: out, retryReview: true });
    await expect(batch.next()).rejects.toMatchObject({
      code: 'usage_error',
      message:
        '--retry-review runs the flagged cutouts again with another model on this computer; add --local and --model NAME (a server chooses its own model)',
    });
    expect(existsSync(path.join(out, JOURNAL))).toBe(false);
  });

  it('a remote batch reads it into its --json lines and journal; the library gives it, locally and remotely', async () => {
    const out = path.join(work, 'remote-out');
    const remote = await rmbg(['remove', inputs, '-o', out, '--api-url', server.url, '--json'], {
      env: { RMBG_API_KEY: apiKey },
    });
    expect(remote.exitCode, remote.stderr).toBe(0);
    const files = jsonLines(remote.stdout).filter((line) => !line.summary) as FileLine[];
    const confidences = Object.fromEntries(files.map((line) => [nameOf(line), line.confidence]));
    expect(confidences['empty.jpg']).toBe(0);
    expect(confidences['clear.jpg']).toBeGreaterThan(0.9);
    expect(jsonLines(remote.stdout).at(-1)).toMatchObject({ toReview: 2, reviewPage: path.join(out, 'review.html') });
    expect(existsSync(path.join(out, 'review.html'))).toBe(true);
    const done = journalOf(out).filter((record) => record.state === 'done');
    expect(done.map((record) => record.confidence).sort()).toEqual(Object.values(confidences).sort());

    const clear = readFileSync(path.join(inputs, 'clear.jpg'));
    const local = await library.removeBackground(clear, { model: WARM });
    const viaServer = await library.removeBackground(clear, { apiUrl: server.url, apiKey });
    expect(local.confidence).toBe(confidences['clear.jpg']);
    expect(viaServer.confidence).toBe(confidences['clear.jpg']);
  });
});
