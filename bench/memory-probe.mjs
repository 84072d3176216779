#!/usr/bin/env node
// Peak RSS of rmbg in a fresh process (so no earlier run's high-water mark counts): one image, or a folder run
// through the real batch. Prints one JSON line. Used by bench/run.mjs; needs a build (dist/).
// Usage: node bench/memory-probe.mjs image FILE [MODEL] [OPTIONS_JSON]
//        node bench/memory-probe.mjs folder DIR OUTDIR CONCURRENCY [MODEL] [DEVICE] [OPTIONS_JSON]
//   OPTIONS_JSON overrides the CLI's options, e.g. '{"size":"50MP","format":"jpg"}'; MODEL may be '' for the default;
//   DEVICE cpu (the default) or gpu. The folder's line also gives the main thread's busy share during the run
//   (event-loop utilisation: per-pixel JS and callbacks), the photos done and the process's CPU time over the run (all
//   its threads; its system part apart); a run's first image is not timed apart. RMBG_BENCH_CHECKOUT measures another
//   build (lib/rmbg.mjs).
import { readFile, rm } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { loadRmbg, BENCH_OPTIONS } from './lib/rmbg.mjs';

const [mode, ...args] = process.argv.slice(2);
const rmbg = await loadRmbg();
const model = (mode === 'image' ? args[1] : args[3]) || undefined;
const device = (mode === 'folder' && args[4]) || 'cpu';
const overrides = (mode === 'image' ? args[2] : args[5]) || '{}';
const options = { ...BENCH_OPTIONS, ...JSON.parse(overrides) };
const engine = await rmbg.createEngine({ model, device });
const afterLoad = process.memoryUsage().rss;
const started = performance.now();
const loopBefore = performance.eventLoopUtilization();
const cpuBefore = process.cpuUsage();
const faultsBefore = process.resourceUsage().minorPageFault;
let photos = 1;
if (mode === 'image') {
  await engine.cutOut(await readFile(args[0]), options);
  await engine.close();
} else {
  const [dir, outDir, concurrency] = args;
  await rm(outDir, { recursive: true, force: true });
  const summary = await rmbg.runFolder(engine, dir, outDir, Number(concurrency), options);
  if (summary.failed) throw new Error(`${summary.failed} file(s) failed: ${summary.failedInputs.join(', ')}`);
  photos = summary.done;
  await engine.close();
}
console.log(
  JSON.stringify({
    mode,
    device: engine.device?.device ?? device,
    afterModelLoadRss: afterLoad,
    maxRss: process.resourceUsage().maxRSS * 1024,
    ms: performance.now() - started,
    mainThreadBusy: performance.eventLoopUtilization(loopBefore).utilization,
    photos,
    cpuMs: (({ user, system }) => (user + system) / 1000)(process.cpuUsage(cpuBefore)),
    systemMs: process.cpuUsage(cpuBefore).system / 1000,
    // Pages touched for the first time (every thread's): each fresh mapping's cost, counted rather than timed.
    minorFaults: process.resourceUsage().minorPageFault - faultsBefore,
  }),
);
