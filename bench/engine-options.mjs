#!/usr/bin/env node
// A/B of the engine's session settings where they matter: pure session.run (wall and process CPU time) and a
// folder run through the real batch, each variant in turn per round, so all see the same machine load.
// Needs a build (dist/) and bench/.work/photos-quick (made by `npm run bench -- --quick`, or here).
// Usage: node bench/engine-options.mjs [rounds=2] [concurrency=2]
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT, median, modelInputTensor } from './lib/inputs.mjs';
import { ms, ratio, table } from './lib/markdown.mjs';
import { preparePhotos } from './lib/photo-set.mjs';
import { loadRmbg } from './lib/rmbg.mjs';

const rounds = Number(process.argv[2] ?? 2);
const concurrency = Number(process.argv[3] ?? 2);
const WORK = join(ROOT, 'bench', '.work');
const VARIANTS = [
  { name: 'threads 2, spin-wait on', options: { threads: 2, spinWait: true } },
  { name: 'threads 2, spin-wait off', options: { threads: 2, spinWait: false } },
  { name: 'threads 1', options: { threads: 1, spinWait: false } },
];
const rmbg = await loadRmbg();
const { dir, photos } = await preparePhotos(WORK, { quick: true });
const tensor = await modelInputTensor(photos[0].file);
const engines = await Promise.all(VARIANTS.map((v) => rmbg.createEngine(v.options)));
for (const engine of engines) await engine.session.run(tensor.slice()); // warm-up (run() moves its input to the worker thread)
const results = VARIANTS.map(() => ({ pure: [], cpu: [], folder: [] }));
for (let round = 1; round <= rounds; round++) {
  for (const [i, variant] of VARIANTS.entries()) {
    const input = tensor.slice();
    const cpu0 = process.cpuUsage(); // the whole process's, so the inference worker thread's CPU counts
    const t = performance.now();
    await engines[i].session.run(input);
    results[i].pure.push(performance.now() - t);
    const cpu = process.cpuUsage(cpu0);
    results[i].cpu.push((cpu.user + cpu.system) / 1000);
    const out = join(WORK, 'out', `ab-${i}`);
    await rm(out, { recursive: true, force: true });
    const f = performance.now();
    await rmbg.runFolder(engines[i], dir, out, concurrency);
    results[i].folder.push(performance.now() - f);
    console.log(
      `round ${round} ${variant.name}: pure ${ms(results[i].pure.at(-1))} ms (cpu ${ms(results[i].cpu.at(-1))} ms), folder ${ms(results[i].folder.at(-1))} ms`,
    );
  }
}
for (const engine of engines) await engine.close();
console.log(`\n${photos.length} photos, folder concurrency ${concurrency}, ${rounds} round(s)\n`);
console.log(
  table(
    ['variant', 'pure ms (runs)', 'pure CPU ms (runs)', 'folder ms (runs)', 'folder median vs first variant'],
    VARIANTS.map((v, i) => [
      v.name,
      results[i].pure.map((x) => ms(x)).join(', '),
      results[i].cpu.map((x) => ms(x)).join(', '),
      results[i].folder.map((x) => ms(x)).join(', '),
      ratio(median(results[i].folder) / median(results[0].folder)),
    ]),
  ),
);
