#!/usr/bin/env node
// Makes the README's pictures from the real CLI and the real model, as small web-sized JPEGs in docs/images/:
//   samples-before-after.jpg  each sample photo (top) and its cutout over a checkerboard (bottom)
//   web-page.jpg              the web page of `rmbg serve` with a photo done, in Debian's chromium
// Run: node scripts/readme-images.mjs   (needs models/ assembled, dist/ built, and /usr/bin/chromium for the
// screenshot; playwright-core is a devDependency). Nothing is fetched from the network.

import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, parse, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import sharp from 'sharp';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'bin', 'rmbg.js');
const SAMPLES = join(ROOT, 'samples');
const IMAGES = join(ROOT, 'docs', 'images');
const HEIGHT = 180; // of each picture in the strip
const GAP = 8;
const run = promisify(execFile);

const work = mkdtempSync(join(tmpdir(), 'rmbg-readme-'));
// No user settings (an API URL there would send the samples to a server).
const env = { ...process.env, RMBG_CONFIG_DIR: join(work, 'config') };
mkdirSync(IMAGES, { recursive: true });

try {
  await beforeAfterStrip();
  await webPageScreenshot();
} finally {
  rmSync(work, { recursive: true, force: true });
}

async function beforeAfterStrip() {
  const out = join(work, 'out');
  await run(
    process.execPath,
    [CLI, 'remove', SAMPLES, '--local', '-o', out, '--size', 'preview', '--format', 'png', '--json'],
    { env },
  );
  const names = readdirSync(SAMPLES)
    .filter((name) => /\.(jpe?g|png|webp)$/i.test(name))
    .sort();
  const pairs = [];
  for (const name of names) {
    const before = await sharp(join(SAMPLES, name))
      .resize({ height: HEIGHT })
      .flatten({ background: '#ffffff' })
      .png()
      .toBuffer({ resolveWithObject: true });
    const { width } = before.info;
    const cutout = await sharp(join(out, `${parse(name).name}.png`))
      .resize({ width, height: HEIGHT, fit: 'fill' })
      .png()
      .toBuffer();
    const after = await sharp(checkerboard(width, HEIGHT), { raw: { width, height: HEIGHT, channels: 3 } })
      .composite([{ input: cutout }])
      .png()
      .toBuffer();
    pairs.push({ width, before: before.data, after });
  }
  const totalWidth = pairs.reduce((sum, pair) => sum + pair.width, 0) + GAP * (pairs.length + 1);
  const layers = [];
  let left = GAP;
  for (const pair of pairs) {
    layers.push({ input: pair.before, left, top: GAP }, { input: pair.after, left, top: GAP * 2 + HEIGHT });
    left += pair.width + GAP;
  }
  const file = join(IMAGES, 'samples-before-after.jpg');
  await sharp({ create: { width: totalWidth, height: HEIGHT * 2 + GAP * 3, channels: 3, background: '#ffffff' } })
    .composite(layers)
    .jpeg({ quality: 80, mozjpeg: true })
    .toFile(file);
  console.log(`wrote ${file}`);
}

/** Grey and white squares, as image editors show transparency. */
function checkerboard(width, height, square = 10) {
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++)
      pixels.fill(
        (Math.floor(x / square) + Math.floor(y / square)) % 2 ? 0xd0 : 0xff,
        (y * width + x) * 3,
        (y * width + x) * 3 + 3,
      );
  }
  return pixels;
}

async function webPageScreenshot() {
  const { launchChromium } = await import('./lib/chromium.mjs');
  const dataDir = join(work, 'data');
  const created = await run(
    process.execPath,
    [CLI, 'keys', 'create', '--json', '--credits', '5', '--data-dir', dataDir],
    { env },
  );
  const { key } = JSON.parse(created.stdout);
  const server = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--data-dir', dataDir], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let browser;
  try {
    const url = await new Promise((found, failed) => {
      let text = '';
      server.stdout.on('data', (chunk) => {
        text += chunk;
        const match = /listening on (http:\/\/\S+)/.exec(text);
        if (match) found(match[1]);
      });
      server.once('exit', (code) => failed(new Error(`rmbg serve exited with ${code}`)));
    });
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 900, height: 1000 } });
    await page.goto(`${url}/`);
    await page.getByLabel('Key').fill(key);
    await page.getByLabel('Size').selectOption('preview');
    await page.locator('#files').setInputFiles(join(SAMPLES, 'chelsea.png'));
    await page.locator('.status.done').waitFor({ timeout: 120_000 });
    await page.getByText('Credits left: 4').waitFor();
    await page.getByLabel('Before / after').fill('45');
    const png = await page.screenshot({ fullPage: true });
    const file = join(IMAGES, 'web-page.jpg');
    await sharp(png).resize({ width: 720 }).jpeg({ quality: 78, mozjpeg: true }).toFile(file);
    console.log(`wrote ${file}`);
  } finally {
    await browser?.close();
    server.kill('SIGTERM');
  }
}
