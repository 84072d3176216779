// npm run bench -- --device gpu: the GPU (onnxruntime's WebGPU provider) against the CPU provider on this machine,
// in one run: pure session.run, a folder of photos at `full` and `preview` at several concurrencies (the default
// of each device and the best), start-up to the first result, and `rmbg serve` requests per second with 8
// clients. Without a hardware GPU it says so and reports the CPU alone (exit 0). Writes bench/.work/gpu-last-run.md.
//
// Usage: node bench/run.mjs --device gpu [--quick] [--model=NAME|PATH] [--runs=N] [--allow-software]
//   --allow-software: measure a software adapter (lavapipe) too; only to try this script on a machine without a
//   GPU, with a small --model: ISNet takes minutes a run there.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, median, modelInputTensor } from './lib/inputs.mjs';
import { ms, ratio, table } from './lib/markdown.mjs';
import { preparePhotos } from './lib/photo-set.mjs';
import { removeTimes, startServe } from './lib/cli-probes.mjs';
import { BENCH_OPTIONS, loadRmbg } from './lib/rmbg.mjs';

const arg = (name, fallback) => {
  const found = process.argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (!found) return fallback;
  return found.includes('=') ? found.slice(found.indexOf('=') + 1) : true;
};
const quick = arg('quick', false) === true;
const model = arg('model', undefined);
const runs = Number(arg('runs', 6));
const allowSoftware = arg('allow-software', false) === true;
const WORK = join(ROOT, 'bench', '.work');
const CLI = join(ROOT, 'bin', 'rmbg.js');
const dist = (path) => pathToFileURL(join(ROOT, 'dist', path)).href;
const log = (line) => console.log(`[bench-gpu ${new Date().toISOString().slice(11, 19)}] ${line}`);

const [
  { gpuEnvironment, mayHaveHardwareGpu, describeEnvironment },
  { probeGpu },
  { concurrencyFor },
  { parseRemoveOptions },
] = await Promise.all([
  import(dist('engine/gpu-environment.js')),
  import(dist('engine/gpu-probe.js')),
  import(dist('engine/device.js')),
  import(dist('api/options.js')),
]);

/** Whether to measure the GPU: a hardware adapter that works (as auto sees it), or any with --allow-software. */
async function gpuVerdict() {
  const environment = gpuEnvironment();
  if (mayHaveHardwareGpu(environment)) {
    const probe = await probeGpu('hidden');
    if (probe.ok) return { gpu: true, why: 'a hardware adapter works' };
    if (!allowSoftware) return { gpu: false, why: `no hardware adapter works: ${probe.error}` };
  } else if (!allowSoftware) return { gpu: false, why: `no GPU device found (${describeEnvironment(environment)})` };
  const probe = await probeGpu('allowed');
  return probe.ok
    ? { gpu: true, why: 'a software adapter (--allow-software): figures say nothing of a real GPU' }
    : { gpu: false, why: `no adapter works: ${probe.error}` };
}

const rmbg = await loadRmbg();
const verdict = await gpuVerdict();
log(`GPU: ${verdict.gpu ? 'measured' : 'NOT measured'}: ${verdict.why}`);
const devices = verdict.gpu ? ['cpu', 'gpu'] : ['cpu'];
await mkdir(WORK, { recursive: true });
const { dir: photoDir, photos } = await preparePhotos(WORK, { quick });
const sizes = { full: BENCH_OPTIONS, preview: parseRemoveOptions({ size: 'preview' }, BENCH_OPTIONS) };
const concurrenciesOf = (device) =>
  [...new Set([1, 2, concurrencyFor(device), 4, 8, 16].filter((c) => c <= Math.max(4, availableParallelism())))].sort(
    (a, b) => a - b,
  );

const results = {};
for (const device of devices) {
  const engine = await rmbg.createEngine({ model, device });
  const tensor = await modelInputTensor(photos.at(-1).file);
  await engine.session.run(tensor.slice()); // the first run compiles the shaders (GPU) or plans (CPU)
  const pure = [];
  for (let i = 0; i < runs; i++) {
    const input = tensor.slice();
    const t = performance.now();
    await engine.session.run(input);
    pure.push(performance.now() - t);
  }
  log(`${device}: session.run median ${ms(median(pure))} ms over ${runs}`);
  const folders = {};
  for (const [size, options] of Object.entries(sizes)) {
    folders[size] = [];
    for (const concurrency of concurrenciesOf(device)) {
      const out = join(WORK, 'out', `gpu-bench-${device}-${size}-${concurrency}`);
      const t = performance.now();
      await rmbg.runFolder(engine, photoDir, out, concurrency, options);
      const wall = performance.now() - t;
      folders[size].push({ concurrency, wall });
      log(`${device} ${size} concurrency ${concurrency}: ${ms(wall)} ms for ${photos.length} photos`);
      await rm(out, { recursive: true, force: true });
    }
  }
  await engine.close();
  const startup = await removeTimes(photos[0].file, 3, model, CLI, ['--device', device]);
  log(`${device}: start-up to the first result ${ms(median(startup.map((s) => s.firstResult)))} ms`);
  const serve = await serveThroughput(device, photos[1].file);
  log(`${device}: rmbg serve ${serve.rps.toFixed(2)} requests/s with 8 clients`);
  results[device] = { pure: median(pure), folders, startup: median(startup.map((s) => s.firstResult)), serve };
}

/** `rmbg serve --device D`, then 8 clients each sending `perClient` requests at size preview, one after another. */
async function serveThroughput(device, file, perClient = quick ? 2 : 4) {
  const server = await startServe({
    credits: 100000,
    flags: [
      '--device',
      device,
      '--max-queue',
      '64',
      '--max-in-flight-per-key',
      '16',
      '--rate-limit',
      '100000',
      ...(model ? ['--model', model] : []),
    ],
  });
  try {
    const image = await readFile(file);
    await server.post(image); // warm
    const t = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = 0; i < perClient; i++) await server.post(image);
      }),
    );
    return { rps: (8 * perClient) / ((performance.now() - t) / 1000) };
  } finally {
    await server.stop();
  }
}

const best = (list) => list.reduce((a, b) => (b.wall < a.wall ? b : a));
const defaultOf = (device, list) => list.find((f) => f.concurrency === concurrencyFor(device));
const rows = [];
for (const device of devices) {
  const r = results[device];
  rows.push([`${device}: session.run (median of ${runs})`, `${ms(r.pure)} ms`, '']);
  for (const size of Object.keys(sizes)) {
    const d = defaultOf(device, r.folders[size]);
    const b = best(r.folders[size]);
    rows.push([
      `${device}: folder at ${size}, default concurrency ${d.concurrency}`,
      `${ms(d.wall)} ms`,
      `${(photos.length / (d.wall / 1000)).toFixed(2)} photos/s`,
    ]);
    rows.push([
      `${device}: folder at ${size}, best (concurrency ${b.concurrency})`,
      `${ms(b.wall)} ms`,
      `${(photos.length / (b.wall / 1000)).toFixed(2)} photos/s`,
    ]);
  }
  rows.push([`${device}: start-up to the first result`, `${ms(r.startup)} ms`, '']);
  rows.push([`${device}: rmbg serve, 8 clients`, '', `${r.serve.rps.toFixed(2)} requests/s`]);
}
if (results.gpu) {
  rows.push(['GPU ÷ CPU: session.run', ratio(results.gpu.pure / results.cpu.pure, 3), '']);
  for (const size of Object.keys(sizes))
    rows.push([
      `GPU ÷ CPU: folder at ${size}, best of each`,
      ratio(best(results.gpu.folders[size]).wall / best(results.cpu.folders[size]).wall, 3),
      '',
    ]);
  rows.push(['GPU ÷ CPU: rmbg serve requests/s', ratio(results.gpu.serve.rps / results.cpu.serve.rps, 3), '']);
}
const report = [
  `# rmbg on the GPU against the CPU (${new Date().toISOString()})`,
  '',
  `Machine: ${availableParallelism()} cores, ${cpus()[0]?.model ?? 'unknown CPU'}; GPU: ${verdict.gpu ? 'measured' : 'not measured'}: ${verdict.why}.`,
  `Folder: ${photos.length} photos${quick ? ' (--quick)' : ''}; model ${model ?? 'the default'}.`,
  '',
  table(['what', 'time', 'throughput'], rows),
  '',
].join('\n');
await writeFile(join(WORK, 'gpu-last-run.md'), report);
console.log(`\n${report}`);
