#!/usr/bin/env node
// Clean edges (issue #45): the foreground's colour under a soft mask estimated by blur fusion
// (src/engine/output/foreground-colour.ts), against composites with known foreground colours
// (bench/lib/edge-composites.mjs): each sample photo's pixels under its cutout's mask, over each other sample (and
// its mirror image). The cutout over white and over black is held to the truth in the band of soft pixels, with the
// true alpha and with the model's alpha of the composite, for today's colours (the photo's), blur fusion's, and the
// true colours (the best any estimate can do). Then the cost: the estimate's milliseconds against the same photo's
// ISNet inference, and on a 12 MP photo.
// Usage: node bench/edge-colour.mjs   (needs a build and the default model)
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import sharp from 'sharp';
import { estimateForeground } from '../dist/engine/output/foreground-colour.js';
import { compositeOver, edgeError, splitRgba } from './lib/edge-composites.mjs';
import { median, ROOT } from './lib/inputs.mjs';
import { table } from './lib/markdown.mjs';
import { preparePhotos } from './lib/photo-set.mjs';
import { BENCH_OPTIONS, loadRmbg } from './lib/rmbg.mjs';

const SAMPLES = ['astronaut.png', 'chelsea.png', 'coffee.png', 'rocket.jpg'].map((name) => join(ROOT, 'samples', name));
const rmbg = await loadRmbg();
const engine = await rmbg.createEngine({ cleanEdges: false });
const options = { ...BENCH_OPTIONS, format: 'png' };

/** The model's cutout of `bytes`: its RGB, alpha and the inference's milliseconds. */
async function cutOut(bytes) {
  const result = await engine.cutOut(bytes, options);
  const { data } = await sharp(result.data).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { ...splitRgba(data), inferenceMs: result.timings.inference };
}

/** `pixels` with blur fusion's colours under `alpha`, and the estimate's milliseconds. */
function cleaned(pixels, alpha, width, height) {
  const copy = Buffer.from(pixels);
  const started = performance.now();
  estimateForeground({ pixels: copy, channels: 3, mask: alpha, width, height });
  return { pixels: copy, ms: performance.now() - started };
}

const foregrounds = [];
for (const file of SAMPLES) {
  const { data, info } = await sharp(file).rotate().removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const { alpha } = await cutOut(await readFile(file));
  foregrounds.push({ file, pixels: data, alpha, width: info.width, height: info.height });
}

const errors = { true: { today: [], fusion: [], perfect: [] }, model: { today: [], fusion: [], perfect: [] } };
const cost = [];
for (const fg of foregrounds) {
  for (const bg of SAMPLES.filter((file) => file !== fg.file)) {
    for (const flop of [false, true]) {
      const photo = await compositeOver(fg, bg, flop);
      const { width, height } = fg;
      const truth = { pixels: fg.pixels, alpha: fg.alpha };
      const png = await sharp(photo, { raw: { width, height, channels: 3 } })
        .png()
        .toBuffer();
      const model = await cutOut(png);
      for (const [kind, alpha] of [
        ['true', fg.alpha],
        ['model', model.alpha],
      ]) {
        const fusion = cleaned(photo, alpha, width, height);
        errors[kind].today.push(edgeError(truth, { pixels: photo, alpha }).levels);
        errors[kind].fusion.push(edgeError(truth, { pixels: fusion.pixels, alpha }).levels);
        errors[kind].perfect.push(edgeError(truth, { pixels: fg.pixels, alpha }).levels);
        if (kind === 'model') cost.push({ size: `${width}×${height}`, ms: fusion.ms, inferenceMs: model.inferenceMs });
      }
    }
  }
}

// A 12 MP photo: the estimate where it costs most (the grid keeps the means' work bounded).
const large = (await preparePhotos(join(ROOT, 'bench', '.work'))).photos.find((p) => p.file.includes('4000x3000'));
const largeModel = await cutOut(await readFile(large.file));
const { data: largePixels, info } = await sharp(large.file).rotate().raw().toBuffer({ resolveWithObject: true });
const largeRuns = [0, 1, 2].map(() => cleaned(largePixels, largeModel.alpha, info.width, info.height).ms);
await engine.close();

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
const composites = errors.true.today.length;
const row = (kind, label) => {
  const { today, fusion, perfect } = errors[kind];
  const change = (mean(fusion) / mean(today) - 1) * 100;
  return [
    label,
    mean(today).toFixed(2),
    mean(fusion).toFixed(2),
    `${change >= 0 ? '+' : ''}${change.toFixed(1)} %`,
    `${fusion.filter((e, i) => e < today[i]).length} of ${today.length}`,
    mean(perfect).toFixed(2),
  ];
};
console.log(
  `${composites} composites (4 samples, each over the 3 others and their mirror images), Node ${process.version}\n`,
);
console.log(
  table(
    ['alpha', "today's colours", 'blur fusion', 'change', 'composites better', 'true colours'],
    [row('true', 'the true alpha'), row('model', "the model's alpha (ISNet)")],
  ),
);
const share = (ms, inference) => `${((ms / inference) * 100).toFixed(1)} %`;
console.log(
  `\nCost: median ${median(cost.map((c) => c.ms)).toFixed(1)} ms per composite (${cost[0].size} and the like), ` +
    `${share(median(cost.map((c) => c.ms)), median(cost.map((c) => c.inferenceMs)))} of its ISNet inference ` +
    `(median ${Math.round(median(cost.map((c) => c.inferenceMs)))} ms); ${info.width}×${info.height}: ` +
    `${Math.round(median(largeRuns))} ms, ${share(median(largeRuns), largeModel.inferenceMs)} of its inference ` +
    `(${Math.round(largeModel.inferenceMs)} ms).`,
);
