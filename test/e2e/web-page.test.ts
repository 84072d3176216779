// The web page of `rmbg serve`, in a real browser (Debian's chromium via playwright-core) against the real
// CLI's server. The model is a tiny identity network (fast; the result keeps the photo's size), so these
// tests check the page and the API it calls, not the quality of the cut.

import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, SCREENSHOTS } from '../helpers/browser-harness.js';
import {
  balance,
  call,
  createKey,
  SAMPLES,
  startIdentityServe,
  tempDataDir,
  type ServeProcess,
} from '../helpers/serve-harness.js';

const RATE_LIMIT = 8;
let dataDir: string;
let server: ServeProcess;
let browser: Browser;

beforeAll(async () => {
  dataDir = tempDataDir();
  [server, browser] = await Promise.all([
    startIdentityServe(dataDir, ['--rate-limit', String(RATE_LIMIT)]),
    launchBrowser(),
  ]);
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A fresh browser context (empty sessionStorage) on the page; fails the test on any CSP violation. */
async function openPage(): Promise<{ page: Page; violations: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
  const page = await context.newPage();
  const violations: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  await page.goto(`${server.url}/`);
  return { page, violations };
}

describe('the page itself', () => {
  it('is served at / with a strict Content-Security-Policy and loads nothing from another host', async () => {
    const answer = await call(`${server.url}/`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = answer.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    const html = answer.body.toString();
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    for (const asset of ['/app.js', '/app.css']) {
      const file = await call(`${server.url}${asset}`);
      expect(file.status, asset).toBe(200);
      expect(file.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('labels every control and keeps the key for the browser session only', async () => {
    const { page, violations } = await openPage();
    for (const label of ['Key', 'Size', 'Format', 'Crop to the subject', 'Fill the background', 'Background colour']) {
      await expect(page.getByLabel(label, { exact: false }).count(), label).resolves.toBeGreaterThan(0);
    }
    await page.getByLabel('Key').fill('rmbg_session_only');
    await page.reload();
    expect(await page.getByLabel('Key').inputValue()).toBe('rmbg_session_only');
    // Keyboard: Tab from the key reaches the "Check key" button, and focus is drawn.
    await page.getByLabel('Key').focus();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('check-key');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle);
    expect(outline).toBe('solid');
    await page.context().close();
    // Another session (a new context) starts without it.
    const other = await openPage();
    expect(await other.page.getByLabel('Key').inputValue()).toBe('');
    await other.page.context().close();
    expect(violations).toEqual([]);
  });
});

/** The page with a fresh key of `credits` typed in and the size and format chosen. */
async function pageWithKey(credits: number, choices: { size: string; format: string }) {
  const { key } = await createKey(dataDir, credits);
  const opened = await openPage();
  await opened.page.getByLabel('Key').fill(key);
  await opened.page.getByLabel('Size').selectOption(choices.size);
  await opened.page.getByLabel('Format').selectOption(choices.format);
  return { ...opened, key };
}

describe('removing backgrounds', () => {
  it('shows each uploaded photo beside its result at the right size, with a slider, a download and the credits left', async () => {
    const { page, violations, key } = await pageWithKey(10, { size: 'full', format: 'png' });
    await page.locator('#files').setInputFiles([join(SAMPLES, 'rocket.jpg'), join(SAMPLES, 'chelsea.png')]);

    const results = page.locator('.result');
    await expect.poll(() => page.locator('.status.done').count(), { timeout: 60_000 }).toBe(2);
    expect(await results.locator('.name').allTextContents()).toEqual(['rocket.jpg', 'chelsea.png']);
    const sizes = await results
      .locator('img.after')
      .evaluateAll((images) =>
        images.map((image) => [(image as HTMLImageElement).naturalWidth, (image as HTMLImageElement).naturalHeight]),
      );
    expect(sizes).toEqual([
      [640, 427],
      [451, 300],
    ]);
    expect(await results.first().locator('.status').textContent()).toBe('Done: 640 × 427 PNG, 1 credit.');
    expect(await results.first().locator('a.download').getAttribute('download')).toBe('rocket.png');
    await expect.poll(() => page.locator('#credits').textContent()).toBe('Credits left: 8');
    expect(await balance(server.url, key)).toMatchObject({ total: 8 });

    // The slider moves the cut between the original (left) and the cutout: by keyboard, as a person would.
    const first = results.first();
    const clip = () => first.locator('img.before').evaluate((image) => getComputedStyle(image).clipPath);
    const slider = first.getByLabel('Before / after');
    const atStart = await clip();
    await slider.focus();
    await page.keyboard.press('End');
    expect(await slider.inputValue()).toBe('100');
    expect(await clip()).not.toBe(atStart);
    await page.screenshot({ path: join(SCREENSHOTS, 'web-page-result-after.png'), fullPage: true });
    await page.keyboard.press('Home');
    expect(await slider.inputValue()).toBe('0');
    await slider.fill('50');
    await page.screenshot({ path: join(SCREENSHOTS, 'web-page-result.png'), fullPage: true });

    // The download is the API's result, byte for byte a PNG of the photo's size.
    const download = await Promise.all([page.waitForEvent('download'), first.locator('a.download').click()]).then(
      ([event]) => event,
    );
    const saved = readFileSync((await download.path()) as string);
    expect(saved.subarray(1, 4).toString()).toBe('PNG');
    expect([saved.readUInt32BE(16), saved.readUInt32BE(20)]).toEqual([640, 427]);
    expect(violations).toEqual([]);
    await page.context().close();
  });

  it('takes photos dropped on the drop zone, and honours size, format and background colour', async () => {
    const { page, violations } = await pageWithKey(3, { size: 'preview', format: 'jpg' });
    await page.getByLabel('Fill the background').check();
    await page.getByLabel('Background colour').fill('#ff0000');
    // A drop as the browser makes it: a DataTransfer holding the file, dispatched on the zone.
    const bytes = readFileSync(join(SAMPLES, 'coffee.png')).toString('base64');
    const transfer = await page.evaluateHandle((data) => {
      const dropped = new DataTransfer();
      dropped.items.add(
        new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], 'coffee.png', { type: 'image/png' }),
      );
      return dropped;
    }, bytes);
    await page.locator('#drop').dispatchEvent('drop', { dataTransfer: transfer });
    await expect.poll(() => page.locator('.status.done').count(), { timeout: 60_000 }).toBe(1);
    // coffee.png is 600×400: preview (at most 0.25 MP) scales it down, keeping its shape; JPG, opaque.
    const [width, height] = await page
      .locator('img.after')
      .evaluate((image) => [(image as HTMLImageElement).naturalWidth, (image as HTMLImageElement).naturalHeight]);
    expect(width * height).toBeLessThanOrEqual(250_000);
    expect(Math.abs(width / height - 1.5)).toBeLessThan(0.01);
    expect(await page.locator('.result .status').textContent()).toBe(`Done: ${width} × ${height} JPG, 1 credit.`);
    expect(await page.locator('a.download').getAttribute('download')).toBe('coffee.jpg');
    // The photo's dark top-left corner is background to the identity model: there the result is the red chosen.
    const corner = await page.locator('img.after').evaluate((image) => {
      const canvas = document.createElement('canvas');
      [canvas.width, canvas.height] = [
        (image as HTMLImageElement).naturalWidth,
        (image as HTMLImageElement).naturalHeight,
      ];
      const context = canvas.getContext('2d') as CanvasRenderingContext2D;
      context.drawImage(image as HTMLImageElement, 0, 0);
      return [...context.getImageData(5, 5, 1, 1).data];
    });
    expect(corner[0]).toBeGreaterThan(220);
    expect(corner[1]).toBeLessThan(40);
    expect(corner[2]).toBeLessThan(40);
    expect(violations).toEqual([]);
    await page.context().close();
  });

  it('says in plain words when a file is not a photo, a key is wrong, the credits ran out or the rate limit is hit', async () => {
    const { key } = await createKey(dataDir, 5);
    const { key: broke } = await createKey(dataDir, 0);
    const { key: busy } = await createKey(dataDir, 5);
    const { page } = await openPage();
    const status = () => page.locator('.result .status').last();
    const upload = async (apiKey: string, file: Parameters<Page['setInputFiles']>[1]) => {
      const before = await page.locator('.result').count();
      await page.getByLabel('Key').fill(apiKey);
      await page.locator('#files').setInputFiles(file);
      await expect
        .poll(() => page.locator('.result .status.error, .result .status.done').count(), { timeout: 60_000 })
        .toBe(before + 1);
      return status().textContent();
    };

    expect(
      await upload(key, { name: 'notes.jpg', mimeType: 'image/jpeg', buffer: Buffer.from('not a photo at all') }),
    ).toMatch(/^This file cannot be used: .+\.$/);
    expect(await balance(server.url, key)).toMatchObject({ total: 5 });
    expect(await upload('rmbg_wrong_key', join(SAMPLES, 'rocket.jpg'))).toBe(
      'The API key was refused. Check the key (it is shown once, by rmbg keys create).',
    );
    expect(await upload(broke, join(SAMPLES, 'rocket.jpg'))).toMatch(/^Out of credits/);
    for (let i = 0; i < RATE_LIMIT; i += 1)
      await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': busy } });
    expect(await upload(busy, join(SAMPLES, 'rocket.jpg'))).toMatch(
      /^Too many requests for this key\. Wait \d+ seconds? and try again\.$/,
    );
    expect(await balance(server.url, busy).catch(() => undefined)).toBeUndefined();
    await page.screenshot({ path: join(SCREENSHOTS, 'web-page-errors.png'), fullPage: true });
    await page.context().close();
  });
});
