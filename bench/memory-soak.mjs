#!/usr/bin/env node
// A long run's memory (issue #40): `rmbg serve` under mixed requests (the bench's photos at every size and format,
// one in ten truncated) and `rmbg remove` over a folder of them, the RSS read as they go, with glibc's malloc as it
// comes (dynamic thresholds) and with the fixed thresholds that bin/malloc-tuning.js gives rmbg, in one run.
// Prints a Markdown table for bench/RESULTS.md: RSS after 30 requests, at the end, and the growth between.
//
// Usage: node bench/memory-soak.mjs [--requests=300] [--model=warm-key|NAME|PATH] [--no-remove] [--preload=PATH]
//   --preload: another allocator as a third set-up (lib/malloc-variants.mjs).
import { mkdirSync, mkdtempSync, linkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { ROOT } from './lib/inputs.mjs';
import { mallocVariants } from './lib/malloc-variants.mjs';
import { mib, table } from './lib/markdown.mjs';
import { soakRemove, soakServe } from './lib/memory-soak.mjs';
import { preparePhotos } from './lib/photo-set.mjs';
import { writeWarmKeyModel } from './lib/warm-key-model.mjs';

const flag = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const requests = Number(flag('requests', 300));
const work = mkdtempSync(join(tmpdir(), 'rmbg-memory-soak-'));
const modelFlag = flag('model', 'isnet-medium-fp32');
const model = modelFlag === 'warm-key' ? writeWarmKeyModel(join(work, 'warm-key.onnx')) : modelFlag;
const photos = (await preparePhotos(join(ROOT, 'bench', '.work'))).photos.map((photo) => photo.file);

const VARIANTS = mallocVariants();

/** RSS after the 30th photo, at the end, the peak, and the growth between. */
function row(what, label, rss) {
  const at30 = rss.find((sample) => sample.requests >= 30).rss;
  const end = rss.at(-1).rss;
  const peak = Math.max(...rss.map((sample) => sample.rss));
  const growth = `${end >= at30 ? '+' : ''}${(((end - at30) / at30) * 100).toFixed(1)} %`;
  console.error(`${what}, ${label}: ${mib(at30)} → ${mib(end)} (${growth}), peak ${mib(peak)}`);
  return [what, label, mib(at30), mib(end), growth, mib(peak)];
}

const rows = [];
for (const { label, env } of VARIANTS) {
  const runEnv = { ...env, RMBG_MODEL: model };
  const served = await soakServe({ dataDir: mkdtempSync(join(work, 'serve-')), photos, requests, env: runEnv });
  rows.push(row(`rmbg serve, ${requests} requests`, label, served.rss));
  if (process.argv.includes('--no-remove')) continue;
  const dir = join(work, 'folder');
  rmSync(dir, { recursive: true, force: true });
  for (let copy = 1; copy * photos.length <= requests; copy++) {
    mkdirSync(join(dir, `copy-${copy}`), { recursive: true });
    for (const photo of photos) linkSync(photo, join(dir, `copy-${copy}`, basename(photo)));
  }
  const outDir = join(work, 'out');
  rmSync(outDir, { recursive: true, force: true });
  const removed = await soakRemove({ dir, outDir, env: runEnv, flags: ['--recursive'] });
  rows.push(row(`rmbg remove, ${removed.summary.done} photos`, label, removed.rss));
}
rmSync(work, { recursive: true, force: true });
console.log(
  `Node ${process.version}, model ${modelFlag}, ${photos.length} photos (${photos.length} sizes up to 4000×3000)\n`,
);
console.log(table(['run', 'malloc', 'RSS after 30', 'at the end', 'growth', 'peak'], rows));
