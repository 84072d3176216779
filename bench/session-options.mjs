#!/usr/bin/env node
// Measures pure session.run time of the ISNet models under onnxruntime session-option variants, on one real
// input tensor, so the engine's choices in src/engine/model/model-session.ts rest on figures from this machine.
// Usage: node bench/session-options.mjs [runs=3] [model ...]   (models: names from models/manifest.json)
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { MODELS_DIR, modelInputTensor, median } from './lib/inputs.mjs';

const runs = Number(process.argv[2] ?? 3);
const manifest = JSON.parse(readFileSync(join(MODELS_DIR, 'manifest.json'), 'utf8'));
const names = process.argv.length > 3 ? process.argv.slice(3) : manifest.models.map((m) => m.name);

const variants = [
  {
    name: 'intra=2 seq all, spinning (rmbg before)',
    opts: { intraOpNumThreads: 2, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' },
  },
  {
    name: 'intra=1 seq all',
    opts: { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' },
  },
  {
    name: 'intra=2 parallel inter=2',
    opts: { intraOpNumThreads: 2, interOpNumThreads: 2, executionMode: 'parallel', graphOptimizationLevel: 'all' },
  },
  {
    name: 'intra=2 seq extended',
    opts: {
      intraOpNumThreads: 2,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'extended',
    },
  },
  {
    name: 'intra=2 seq all, no mem arena',
    opts: {
      intraOpNumThreads: 2,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      enableCpuMemArena: false,
    },
  },
  {
    name: 'intra=2 seq all, no mem pattern',
    opts: {
      intraOpNumThreads: 2,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      enableMemPattern: false,
    },
  },
  {
    name: 'intra=2 seq all, no spinning (rmbg now)',
    opts: {
      intraOpNumThreads: 2,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      extra: { session: { intra_op: { allow_spinning: '0' } } },
    },
  },
];

const input = await modelInputTensor(join('samples', 'rocket.jpg'));
for (const name of names) {
  const entry = manifest.models.find((m) => m.name === name);
  const path = join(MODELS_DIR, entry.file);
  if (!existsSync(path)) {
    console.log(`${name}: not installed (npm run models -- ${name})`);
    continue;
  }
  for (const variant of variants) {
    const t0 = performance.now();
    const session = await ort.InferenceSession.create(path, { executionProviders: ['cpu'], ...variant.opts });
    const loadMs = performance.now() - t0;
    const feeds = { [entry.input.name]: new ort.Tensor('float32', input, entry.input.shape) };
    await session.run(feeds, [entry.output]); // warm-up: first run allocates and plans
    const times = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      await session.run(feeds, [entry.output]);
      times.push(performance.now() - t);
    }
    await session.release();
    console.log(
      `${name.padEnd(13)} ${variant.name.padEnd(34)} load ${loadMs.toFixed(0).padStart(5)} ms  run median ${median(times).toFixed(0).padStart(5)} ms  [${times.map((t) => t.toFixed(0)).join(', ')}]`,
    );
  }
}
