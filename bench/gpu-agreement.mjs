#!/usr/bin/env node
// The GPU's cut-out against the CPU's on one photo, with the time of each: the model on `--device gpu` (any
// adapter, a software one included: lavapipe takes minutes with ISNet) and on the CPU provider.
// Usage: node bench/gpu-agreement.mjs [--model=NAME|PATH] [--photo=FILE] [--size=preview]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import { ROOT } from './lib/inputs.mjs';

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const dist = (path) => pathToFileURL(join(ROOT, 'dist', path)).href;
const [{ createEngine }, { parseRemoveOptions }] = await Promise.all([
  import(dist('engine/index.js')),
  import(dist('api/options.js')),
]);
const photo = readFileSync(arg('photo', join(ROOT, 'samples', 'chelsea.png')));
const options = parseRemoveOptions({ size: arg('size', 'preview'), format: 'png' });
const model = arg('model', undefined);

async function timed(device) {
  let started = performance.now();
  const engine = await createEngine({ model, device });
  const readyMs = performance.now() - started;
  started = performance.now();
  const result = await engine.cutOut(photo, options);
  const runMs = performance.now() - started;
  await engine.close();
  return {
    device: engine.device,
    readyMs: Math.round(readyMs),
    runMs: Math.round(runMs),
    alpha: await sharp(result.data).extractChannel(3).raw().toBuffer(),
  };
}

const cpu = await timed('cpu');
const gpu = await timed('gpu');
let max = 0;
let off = 0;
for (let i = 0; i < cpu.alpha.length; i++) {
  const difference = Math.abs(cpu.alpha[i] - gpu.alpha[i]);
  max = Math.max(max, difference);
  if (difference > 1) off++;
}
console.log(
  JSON.stringify({
    gpu: gpu.device,
    cpuReadyMs: cpu.readyMs,
    cpuRunMs: cpu.runMs,
    gpuReadyMs: gpu.readyMs,
    gpuRunMs: gpu.runMs,
    pixels: cpu.alpha.length,
    maxAlphaDifference: max,
    pixelsOffByMoreThanOne: off,
  }),
);
