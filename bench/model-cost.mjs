#!/usr/bin/env node
// What a bigger model costs per photo on this machine's CPU, said before anyone downloads one (issue #36): the real
// default ISNet against GENERATED stand-ins for ISNet, BiRefNet-lite and BiRefNet, because the real BiRefNet files
// (rembg's release on GitHub) cannot be downloaded here. A stand-in has the real file's input and output shapes
// (1×3×1024² → 1×1×1024²) and its weight bytes (176, 224, 973 MB): a 32×32 patch embedding into 1024 channels,
// N 1×1 convolutions of 1024×1024 weights at 32×32, a transposed convolution back to 1024². So every weight is
// read for every run and the arithmetic grows with the weights, as in the real networks, but it is not their
// arithmetic: the ISNet stand-in against the real ISNet shows how far the recipe is from a real graph.
// Usage: node bench/model-cost.mjs [runs=3]        (prints a Markdown table; npm run build first)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytes, int, model, tensorInfo } from '../dist/engine/model/onnx-bytes.js';
import { builtInModelPath } from '../dist/engine/model/built-in-weights.js';
import { MODELS_DIR, readManifest } from '../dist/engine/model/model-registry.js';
import { median } from './lib/inputs.mjs';

const RUNS = Number(process.argv[2] ?? 3);
const SIZE = 1024;
const PATCH = 32;
const WIDTH = 1024; // channels of the 1×1 convolutions

/** A FLOAT initializer of `dims`, every value `value` (the time of a run does not depend on the values). */
function constantTensor(name, dims, value) {
  const count = dims.reduce((a, b) => a * b, 1);
  const raw = Buffer.alloc(count * 4);
  const one = Buffer.alloc(4);
  one.writeFloatLE(value);
  raw.fill(one);
  return Buffer.concat([...dims.map((d) => int(1, d)), int(2, 1), bytes(8, name), bytes(9, raw)]);
}

const ints = (name, values) => Buffer.concat([bytes(1, name), int(20, 7 /* INTS */), ...values.map((v) => int(8, v))]);

function node(op, inputs, output, attributes = []) {
  return Buffer.concat([
    ...inputs.map((name) => bytes(1, name)),
    bytes(2, output),
    bytes(4, op),
    ...attributes.map((attribute) => bytes(5, attribute)),
  ]);
}

/** The stand-in for a model of `megabytes` of fp32 weights, as described above. */
function standIn(megabytes) {
  const embed = 3 * PATCH * PATCH * WIDTH;
  const head = WIDTH * PATCH * PATCH;
  const layers = Math.max(1, Math.round((megabytes * 1e6) / 4 - embed - head) / (WIDTH * WIDTH));
  const nodes = [];
  const weights = [];
  const patch = [ints('kernel_shape', [PATCH, PATCH]), ints('strides', [PATCH, PATCH])];
  weights.push(constantTensor('embed', [WIDTH, 3, PATCH, PATCH], 0.001));
  nodes.push(node('Conv', ['input', 'embed'], 'x0', patch));
  for (let i = 0; i < Math.round(layers); i++) {
    weights.push(constantTensor(`w${i}`, [WIDTH, WIDTH, 1, 1], 0.001));
    nodes.push(node('Conv', [`x${i}`, `w${i}`], `c${i}`));
    nodes.push(node('Relu', [`c${i}`], `x${i + 1}`));
  }
  weights.push(constantTensor('head', [WIDTH, 1, PATCH, PATCH], 0.001));
  nodes.push(node('ConvTranspose', [`x${Math.round(layers)}`, 'head'], 'output', patch));
  const graph = Buffer.concat([
    ...nodes.map((n) => bytes(1, n)),
    bytes(2, 'stand_in'),
    ...weights.map((w) => bytes(5, w)),
    bytes(11, tensorInfo('input', [1, 3, SIZE, SIZE])),
    bytes(12, tensorInfo('output', [1, 1, SIZE, SIZE])),
  ]);
  return model(graph);
}

async function secondsPerRun(ort, path) {
  const session = await ort.InferenceSession.create(path, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
  });
  const input = new ort.Tensor('float32', new Float32Array(3 * SIZE * SIZE).fill(0.1), [1, 3, SIZE, SIZE]);
  const feeds = { [session.inputNames[0]]: input };
  await session.run(feeds); // the first run allocates
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await session.run(feeds);
    times.push((performance.now() - started) / 1000);
  }
  await session.release();
  return median(times);
}

const ort = await import('onnxruntime-node');
const work = mkdtempSync(join(tmpdir(), 'rmbg-model-cost-'));
const rows = [];
try {
  const isnet = readManifest().models.find((m) => m.name === 'isnet-medium-fp32');
  const realPath = builtInModelPath(MODELS_DIR, isnet);
  rows.push(['isnet-medium-fp32 (real, the default)', isnet.bytes / 1e6, await secondsPerRun(ort, realPath)]);
  for (const [label, megabytes] of [
    ['ISNet-sized stand-in (generated)', 176],
    ['BiRefNet-lite-sized stand-in (generated)', 224],
    ['BiRefNet-sized stand-in (generated)', 973],
  ]) {
    const file = join(work, `${megabytes}.onnx`);
    writeFileSync(file, standIn(megabytes));
    rows.push([label, megabytes, await secondsPerRun(ort, file)]);
    rmSync(file);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(`CPU, ${RUNS} runs each after one warm-up, median seconds per model run (1024² input)\n`);
// The recipe's error on ISNet, where both the real graph and its stand-in ran: applied to the others, a rough estimate.
const [, , realIsnet] = rows[0];
const [, , isnetStandIn] = rows[1];
const factor = realIsnet / isnetStandIn;
console.log(
  `| model | weights, MB | s per run | estimate for the real model (× ${factor.toFixed(2)}, ISNet's real / stand-in) |`,
);
console.log('|---|---|---|---|');
for (const [label, megabytes, seconds] of rows)
  console.log(
    `| ${label} | ${Math.round(megabytes)} | ${seconds.toFixed(2)} | ${label.includes('stand-in') ? (seconds * factor).toFixed(1) : '(measured)'} |`,
  );
