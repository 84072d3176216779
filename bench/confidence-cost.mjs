#!/usr/bin/env node
// What the cutout's confidence (issue #36, src/engine/output/mask-confidence.ts) costs beside the model: the engine's
// own stage timings of each sample photo, run one after the other on the CPU, the confidence against the inference
// of the same run. The first photos run the confidence's loop before V8 has optimised it.
// Usage: node bench/confidence-cost.mjs [rounds=2]        (npm run build first)
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CALLER_DEFAULT_OPTIONS } from '../dist/api/options.js';
import { createEngine } from '../dist/engine/index.js';

const ROUNDS = Number(process.argv[2] ?? 2);
const samples = new URL('../samples/', import.meta.url).pathname;
const engine = await createEngine({ device: 'cpu' });
console.log('| round | photo | confidence (ms) | inference (ms) | ratio |\n|---|---|---|---|---|');
for (let round = 1; round <= ROUNDS; round++) {
  for (const name of readdirSync(samples).sort()) {
    const result = await engine.cutOut(readFileSync(join(samples, name)), CALLER_DEFAULT_OPTIONS);
    const { confidence, inference } = result.timings;
    const ratio = ((confidence / inference) * 100).toFixed(3);
    console.log(`| ${round} | ${name} | ${confidence.toFixed(1)} | ${inference.toFixed(0)} | ${ratio} % |`);
  }
}
await engine.close();
