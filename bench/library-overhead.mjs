#!/usr/bin/env node
// The library's cost over the CLI's engine: import time of `rmbg` (fresh processes), and removeBackground()
// against what `rmbg remove --local` runs per photo (read the file, engine.removeBackground) on the same
// photos, interleaved in one process so both see the same load. Options: the CLI's defaults (full, auto).
//
// Usage: node bench/library-overhead.mjs [rounds=10] [photo…]   (after `npm run build`)
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, median } from './lib/inputs.mjs';
import { ms, ratio, table } from './lib/markdown.mjs';

const rounds = Number(process.argv[2] ?? 10);
const photos = process.argv.length > 3 ? process.argv.slice(3) : ['samples/rocket.jpg', 'samples/astronaut.png'];
const dist = (path) => pathToFileURL(join(ROOT, 'dist', path)).href;

/** Milliseconds to import `module` in a fresh node, median of `runs` processes. */
function importMs(module, runs = 7) {
  const script = `const t = performance.now(); await import(${JSON.stringify(module)}); console.log(performance.now() - t);`;
  const times = Array.from({ length: runs }, () =>
    Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })),
  );
  return median(times);
}

const imports = {
  library: importMs(dist('index.js')),
  engine: importMs(dist('engine/index.js')),
};

const [{ createRmbg }, { createEngine }, { CALLER_DEFAULT_OPTIONS }] = await Promise.all([
  import(dist('index.js')),
  import(dist('engine/index.js')),
  import(dist('api/options.js')),
]);
const engine = await createEngine();
const rmbg = createRmbg();

const timed = async (run) => {
  const started = performance.now();
  await run();
  return performance.now() - started;
};
const cli = (photo) => timed(async () => engine.cutOut(await readFile(join(ROOT, photo)), CALLER_DEFAULT_OPTIONS));
const library = (photo) => timed(() => rmbg.removeBackground(join(ROOT, photo)));

const rows = [];
for (const photo of photos) {
  await cli(photo); // warm-up: both engines loaded, caches filled
  await library(photo);
  const times = { cli: [], library: [] };
  for (let round = 0; round < rounds; round++) {
    // Alternating order, so neither side always runs second under the same load.
    const order = round % 2 ? ['library', 'cli'] : ['cli', 'library'];
    for (const side of order) times[side].push(await (side === 'cli' ? cli(photo) : library(photo)));
  }
  const ratios = times.library.map((t, i) => t / times.cli[i]);
  rows.push([
    photo,
    ms(median(times.cli)),
    ms(median(times.library)),
    ratio(median(ratios), 3),
    `${ratio(Math.min(...ratios), 3)} – ${ratio(Math.max(...ratios), 3)}`,
  ]);
}
await rmbg.close();
await engine.close();

console.log(
  `import time (median of 7 fresh processes): rmbg ${imports.library.toFixed(1)} ms; the engine module alone (sharp; onnxruntime loads with the model) ${imports.engine.toFixed(1)} ms\n`,
);
console.log(
  `removeBackground() vs the CLI's engine, ${rounds} interleaved rounds, ms (load average ${(await import('node:os')).loadavg()[0].toFixed(1)}):\n`,
);
console.log(
  table(
    ['photo', 'CLI engine (median)', 'removeBackground() (median)', 'ratio (median of pairs)', 'ratio range'],
    rows,
  ),
);
