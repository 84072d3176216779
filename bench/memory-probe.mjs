#!/usr/bin/env node
// Peak RSS of rmbg in a fresh process (so no earlier run's high-water mark counts): one image, or a folder run
// through the real batch. Prints one JSON line. Used by bench/run.mjs; needs a build (dist/).
// Usage: node bench/memory-probe.mjs image FILE [MODEL] [OPTIONS_JSON] | folder DIR OUTDIR CONCURRENCY [MODEL]
//   OPTIONS_JSON overrides the CLI's options, e.g. '{"size":"50MP","format":"jpg"}'; MODEL may be '' for the default.
import { readFile, rm } from 'node:fs/promises';
import { loadRmbg, BENCH_OPTIONS } from './lib/rmbg.mjs';

const [mode, ...args] = process.argv.slice(2);
const rmbg = await loadRmbg();
const model = (mode === 'image' ? args[1] : args[3]) || undefined;
const engine = await rmbg.createEngine({ model });
const afterLoad = process.memoryUsage().rss;
const started = performance.now();
if (mode === 'image') {
  const options = { ...BENCH_OPTIONS, ...(args[2] ? JSON.parse(args[2]) : {}) };
  await engine.cutOut(await readFile(args[0]), options);
  await engine.close();
} else {
  const [dir, outDir, concurrency] = args;
  await rm(outDir, { recursive: true, force: true });
  const summary = await rmbg.runFolder(engine, dir, outDir, Number(concurrency));
  if (summary.failed) throw new Error(`${summary.failed} file(s) failed: ${summary.failedInputs.join(', ')}`);
  await engine.close();
}
console.log(
  JSON.stringify({
    mode,
    afterModelLoadRss: afterLoad,
    maxRss: process.resourceUsage().maxRSS * 1024,
    ms: performance.now() - started,
  }),
);
