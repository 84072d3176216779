#!/usr/bin/env node
// Which model should be the default: pure session.run time of each installed manifest model (interleaved, so
// both see the same machine load) and the agreement of their masks on the samples (IoU of alpha ≥ 128,
// mean absolute alpha difference). Needs a build (dist/) and the models (npm run models -- --all).
// Usage: node bench/model-agreement.mjs [runs=2] [model…]   (default: every installed manifest model)
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { MODELS_DIR, ROOT, median, modelInputTensor } from './lib/inputs.mjs';
import { ms, table } from './lib/markdown.mjs';
import { loadRmbg } from './lib/rmbg.mjs';

const runs = Number(process.argv[2] ?? 2);
const SAMPLES = ['astronaut.png', 'chelsea.png', 'coffee.png', 'rocket.jpg'];
const rmbg = await loadRmbg();
const manifest = JSON.parse(await readFile(join(MODELS_DIR, 'manifest.json'), 'utf8'));
const wanted = process.argv.slice(3);
const names = manifest.models
  .map((m) => m.name)
  .filter((name) => !wanted.length || wanted.includes(name))
  .filter((name) => existsSync(join(MODELS_DIR, manifest.models.find((m) => m.name === name).file)));
if (names.length < 2) throw new Error(`only ${names.join(', ')} installed: run 'npm run models -- --all' first`);
const engines = Object.fromEntries(
  await Promise.all(names.map(async (name) => [name, await rmbg.createEngine({ model: name })])),
);

const alphaOf = async (result) => await sharp(result.data).ensureAlpha().extractChannel(3).raw().toBuffer();
const times = Object.fromEntries(names.map((n) => [n, []]));
const rows = [];
const [reference, ...others] = names;
for (const sample of SAMPLES) {
  const input = await readFile(join(ROOT, 'samples', sample));
  const tensor = await modelInputTensor(join('samples', sample));
  const alphas = {};
  for (let r = 0; r < runs; r++) {
    for (const name of names) {
      const copy = tensor.slice(); // run() moves its input to the inference worker thread
      const t = performance.now();
      await engines[name].session.run(copy);
      times[name].push(performance.now() - t);
    }
  }
  for (const name of names)
    alphas[name] = await alphaOf(
      await engines[name].cutOut(input, { size: 'full', format: 'png', crop: false, bgColor: undefined }),
    );
  for (const other of others) {
    const a = alphas[reference];
    const b = alphas[other];
    let inter = 0;
    let union = 0;
    let diff = 0;
    let maxDiff = 0;
    for (let i = 0; i < a.length; i++) {
      const fa = a[i] >= 128;
      const fb = b[i] >= 128;
      if (fa && fb) inter++;
      if (fa || fb) union++;
      const d = Math.abs(a[i] - b[i]);
      diff += d;
      if (d > maxDiff) maxDiff = d;
    }
    rows.push([
      sample,
      `${reference} vs ${other}`,
      union ? (inter / union).toFixed(4) : '–',
      (diff / a.length).toFixed(3),
      String(maxDiff),
    ]);
  }
  console.log(`${sample}: ${names.map((n) => `${n} ${ms(times[n].at(-1))} ms`).join(', ')}`);
}
for (const engine of Object.values(engines)) await engine.close();
console.log(
  `\n${table(
    ['model', 'pure session.run median ms', 'runs ms'],
    names.map((n) => [n, ms(median(times[n])), times[n].map((t) => ms(t)).join(', ')]),
  )}\n`,
);
console.log(table(['sample', 'models', 'IoU (alpha ≥ 128)', 'mean |Δalpha| (0..255)', 'max |Δalpha|'], rows));
