#!/usr/bin/env node
// The main thread's share of each photo, a baseline build against this one (issue #26, round 3): a folder through the
// real batch (runFolder) in fresh processes (bench/memory-probe.mjs), with the real default model on the CPU provider
// and with the warm-key model, whose run costs next to nothing, so that folder's rate is the pipeline's own ceiling:
// the bound any GPU would hit. Per run: photos/s, main thread busy (event-loop utilisation) and its busy ms per photo
// (utilisation × wall ÷ photos), and the process's CPU ms per photo (all threads). Each before/after pair runs back to
// back, the order alternating by round; the table gives the medians and after ÷ before.
// Usage: node bench/main-thread.mjs BASELINE [--rounds=2] [--copies=4] [--models=real,warm] [--sizes=full,preview]
//          [--concurrency=2,8]
//   BASELINE: a folder holding the baseline's dist/ with models/ and node_modules/ reachable from it (links will do).
//   --copies: the warm-key folder holds each of the 9 photos that many times (the real model's holds each once).
// Writes bench/.work/main-thread.md and .json. Needs a build (npm run build).
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { median, ROOT } from './lib/inputs.mjs';
import { ratio, table } from './lib/markdown.mjs';
import { preparePhotos } from './lib/photo-set.mjs';
import { writeWarmKeyModel } from './lib/warm-key-model.mjs';

const WORK = join(ROOT, 'bench', '.work');
const [baselineArg, ...flags] = process.argv.slice(2);
if (!baselineArg) throw new Error('usage: node bench/main-thread.mjs BASELINE [--rounds=N] [--copies=N] …');
const flag = (name, fallback) => flags.find((f) => f.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const baseline = resolve(baselineArg);
const rounds = Number(flag('rounds', '2'));
const models = flag('models', 'real,warm').split(',');
const sizes = flag('sizes', 'full,preview').split(',');
const concurrencies = flag('concurrency', '2,8').split(',').map(Number);

await mkdir(WORK, { recursive: true });
const folders = {
  real: { dir: (await preparePhotos(WORK)).dir, model: '' },
  warm: {
    dir: (await preparePhotos(WORK, { copies: Number(flag('copies', '4')) })).dir,
    model: writeWarmKeyModel(join(WORK, 'warm-key.onnx')),
  },
};
const builds = { before: baseline, after: ROOT };

/** One folder run of `build` in a fresh process: memory-probe's line. */
async function folderRun(build, { dir, model }, size, concurrency) {
  const out = join(WORK, 'out', `main-thread-${build}`);
  const args = [join(ROOT, 'bench', 'memory-probe.mjs'), 'folder', dir, out, String(concurrency), model, 'cpu'];
  args.push(JSON.stringify(size === 'full' ? {} : { size }));
  const { stdout } = await promisify(execFile)(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, RMBG_BENCH_CHECKOUT: builds[build] },
    maxBuffer: 1 << 24,
  });
  await rm(out, { recursive: true, force: true });
  const probe = JSON.parse(stdout.trim().split('\n').pop());
  return {
    photosPerSecond: probe.photos / (probe.ms / 1000),
    busy: probe.mainThreadBusy,
    busyMsPerPhoto: (probe.mainThreadBusy * probe.ms) / probe.photos,
    cpuMsPerPhoto: probe.cpuMs / probe.photos,
    photos: probe.photos,
    ms: probe.ms,
  };
}

const lines = [];
for (const modelName of models) {
  for (const size of sizes) {
    for (const concurrency of concurrencies) {
      const runs = { before: [], after: [] };
      for (let round = 0; round < rounds; round++) {
        for (const build of round % 2 ? ['after', 'before'] : ['before', 'after']) {
          const run = await folderRun(build, folders[modelName], size, concurrency);
          runs[build].push(run);
          console.log(
            `${modelName} ${size} c${concurrency} round ${round + 1} ${build}: ${run.photos} photos in ${Math.round(run.ms)} ms, ` +
              `${run.photosPerSecond.toFixed(2)} photos/s, main ${Math.round(run.busy * 100)} % = ${run.busyMsPerPhoto.toFixed(1)} ms/photo, ` +
              `CPU ${Math.round(run.cpuMsPerPhoto)} ms/photo`,
          );
        }
      }
      const med = (build, key) => median(runs[build].map((run) => run[key]));
      lines.push({ model: modelName, size, concurrency, runs, med });
    }
  }
}

const cells = (m) => [
  `${m('photosPerSecond').toFixed(2)} photos/s`,
  `${Math.round(m('busy') * 100)} %`,
  `${m('busyMsPerPhoto').toFixed(1)} ms`,
  `${Math.round(m('cpuMsPerPhoto'))} ms`,
];
const report = table(
  [
    'model, size, concurrency',
    'before: rate',
    'main busy',
    'main ms/photo',
    'CPU ms/photo',
    'after: rate',
    'main busy',
    'main ms/photo',
    'CPU ms/photo',
    'after ÷ before: photos/s',
    'main ms/photo',
    'CPU ms/photo',
  ],
  lines.map(({ model, size, concurrency, med }) => [
    `${model === 'real' ? 'default model, CPU' : 'warm-key'}, ${size}, ${concurrency}`,
    ...cells((key) => med('before', key)),
    ...cells((key) => med('after', key)),
    ratio(med('after', 'photosPerSecond') / med('before', 'photosPerSecond')),
    ratio(med('after', 'busyMsPerPhoto') / med('before', 'busyMsPerPhoto')),
    ratio(med('after', 'cpuMsPerPhoto') / med('before', 'cpuMsPerPhoto')),
  ]),
);
console.log(`\n${report}`);
await writeFile(join(WORK, 'main-thread.md'), `${report}\n`);
await writeFile(join(WORK, 'main-thread.json'), JSON.stringify(lines, null, 1));
