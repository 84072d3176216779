// npm run bench -- --device gpu: the GPU (onnxruntime's WebGPU provider) against the CPU provider on this machine,
// in one run: pure session.run; a folder of photos at `full` and `preview` at each device's default concurrency, as
// `rmbg remove DIR` runs it (a fresh process: its peak RSS, the main thread's busy share, and on an NVIDIA GPU the
// GPU's busy share from nvidia-smi), at `full` with libuv's default pool of 4 threads and with the CLI's (one per
// core); start-up to the first result of `rmbg remove` with --device cpu, gpu and auto; `rmbg serve` requests per
// second with 8 clients. Without a hardware GPU it says so and reports the CPU alone (exit 0). Writes
// bench/.work/gpu-last-run.md.
//
// Usage: node bench/run.mjs --device gpu [--quick] [--model=NAME|PATH] [--runs=N] [--copies=N] [--sweep]
//   [--allow-software]
//   --copies=N: each photo N times in the folder (a GPU takes the 9 photos in about a second).
//   --sweep: the folder at `full` at concurrencies 1, 2, 4, 8, 16 (up to the cores) too.
//   --allow-software: measure a software adapter (lavapipe) too; only to try this script on a machine without a
//   GPU, with a small --model: ISNet takes minutes a run there.
import { execFile, spawn } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { ROOT, median, modelInputTensor } from './lib/inputs.mjs';
import { mib, ms, ratio, table } from './lib/markdown.mjs';
import { preparePhotos } from './lib/photo-set.mjs';
import { removeTimes, startServe } from './lib/cli-probes.mjs';
import { loadRmbg } from './lib/rmbg.mjs';

const arg = (name, fallback) => {
  const found = process.argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (!found) return fallback;
  return found.includes('=') ? found.slice(found.indexOf('=') + 1) : true;
};
const quick = arg('quick', false) === true;
const model = arg('model', undefined);
const runs = Number(arg('runs', 6));
const copies = Number(arg('copies', 1));
const sweep = arg('sweep', false) === true;
const allowSoftware = arg('allow-software', false) === true;
const WORK = join(ROOT, 'bench', '.work');
const CLI = join(ROOT, 'bin', 'rmbg.js');
const dist = (path) => pathToFileURL(join(ROOT, 'dist', path)).href;
const log = (line) => console.log(`[bench-gpu ${new Date().toISOString().slice(11, 19)}] ${line}`);
const cores = availableParallelism();
/** libuv's default pool, and the CLI's (bin/rmbg.js). */
const POOLS = [...new Set([4, Math.max(4, cores)])];

const [{ gpuEnvironment, mayHaveHardwareGpu, describeEnvironment }, { probeGpu }, { concurrencyFor }] =
  await Promise.all([
    import(dist('engine/gpu/gpu-environment.js')),
    import(dist('engine/gpu/gpu-probe.js')),
    import(dist('engine/runtime/device-report.js')),
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

/** The GPU's busy share (0..1) while `work` runs, from nvidia-smi every 100 ms; undefined without nvidia-smi. */
async function gpuBusyDuring(work) {
  const samples = [];
  const smi = spawn('nvidia-smi', ['--query-gpu=utilization.gpu', '--format=csv,noheader,nounits', '-lms', '100'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  smi.on('error', () => undefined);
  smi.stdout.on('data', (chunk) => {
    for (const line of String(chunk).split('\n')) if (/^\d+/.test(line.trim())) samples.push(Number(line.trim()));
  });
  try {
    return {
      result: await work(),
      gpuBusy: samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length / 100 : undefined,
    };
  } finally {
    smi.kill();
  }
}

/** The folder as `rmbg remove DIR --local --device D` runs it, in a fresh process with libuv's pool of `pool`:
 * its time from the engine's load to the last photo, peak RSS and main thread's busy share. */
async function folderProcess(device, size, concurrency, pool, tag = '') {
  const out = join(WORK, 'out', `gpu-bench-${device}-${size}-${concurrency}-${pool}${tag}`);
  const args = [join(ROOT, 'bench', 'memory-probe.mjs'), 'folder', photoDir, out, String(concurrency), model ?? ''];
  args.push(device, JSON.stringify(size === 'full' ? {} : { size }));
  const { stdout } = await promisify(execFile)(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, UV_THREADPOOL_SIZE: String(pool) },
    maxBuffer: 1 << 24,
  });
  await rm(out, { recursive: true, force: true });
  const probe = JSON.parse(stdout.trim().split('\n').pop());
  if (probe.device !== device) throw new Error(`the folder ran on the ${probe.device}, not the ${device}`);
  return probe;
}

/** `processes` such processes at once (one queue each, sharing the device), the GPU's busy share sampled. */
async function folderRun(device, size, concurrency, pool, processes = 1) {
  const work = () =>
    Promise.all(Array.from({ length: processes }, (_, i) => folderProcess(device, size, concurrency, pool, `-${i}`)));
  const { result: probes, gpuBusy } = device === 'gpu' ? await gpuBusyDuring(work) : { result: await work() };
  const line = {
    size,
    concurrency,
    pool,
    processes,
    photos: photos.length * processes,
    wall: Math.max(...probes.map((p) => p.ms)),
    maxRss: Math.max(...probes.map((p) => p.maxRss)),
    main: Math.max(...probes.map((p) => p.mainThreadBusy)),
    gpuBusy,
  };
  log(
    `${device} ${size}${processes > 1 ? ` ${processes} processes,` : ''} concurrency ${concurrency} pool ${pool}: ` +
      `${ms(line.wall)} ms for ${line.photos} photos, main thread ${pct(line.main)}, GPU ${pct(gpuBusy)}, ` +
      `peak RSS ${mib(line.maxRss)}`,
  );
  return line;
}

const pct = (share) => (share === undefined ? '–' : `${Math.round(share * 100)} %`);

const rmbg = await loadRmbg();
const verdict = await gpuVerdict();
log(`GPU: ${verdict.gpu ? 'measured' : 'NOT measured'}: ${verdict.why}`);
const devices = verdict.gpu ? ['cpu', 'gpu'] : ['cpu'];
await mkdir(WORK, { recursive: true });
const { dir: photoDir, photos } = await preparePhotos(WORK, { quick, copies });
const megapixels = photos.reduce((total, p) => total + p.width * p.height, 0) / 1e6;

const results = {};
for (const device of devices) {
  const engine = await rmbg.createEngine({ model, device });
  const tensor = await modelInputTensor(photos.at(-1).file);
  let t = performance.now();
  await engine.session.run(tensor.slice()); // the first run compiles the shaders (GPU) or plans (CPU)
  const firstRun = performance.now() - t;
  const pure = [];
  for (let i = 0; i < runs; i++) {
    const input = tensor.slice();
    t = performance.now();
    await engine.session.run(input);
    pure.push(performance.now() - t);
  }
  await engine.close();
  log(`${device}: session.run median ${ms(median(pure))} ms over ${runs} (first ${ms(firstRun)} ms)`);
  const concurrency = concurrencyFor(device);
  const folders = [];
  for (const pool of POOLS) folders.push(await folderRun(device, 'full', concurrency, pool));
  folders.push(await folderRun(device, 'preview', concurrency, POOLS.at(-1)));
  if (device === 'gpu') folders.push(await folderRun(device, 'full', concurrency, POOLS.at(-1), 2));
  if (sweep)
    for (const c of [1, 2, 4, 8, 16].filter((c) => c <= cores && c !== concurrency))
      folders.push(await folderRun(device, 'full', c, POOLS.at(-1)));
  const startup = {};
  for (const requested of device === 'gpu' ? ['gpu', 'auto'] : ['cpu']) {
    const times = await removeTimes(photos[0].file, quick ? 2 : 3, model, CLI, ['--device', requested]);
    startup[requested] = median(times.map((s) => s.firstResult));
    log(`--device ${requested}: start-up to the first result ${ms(startup[requested])} ms`);
  }
  const serve = await serveThroughput(device, photos[1].file);
  log(`${device}: rmbg serve ${serve.rps.toFixed(2)} requests/s with 8 clients`);
  results[device] = { pure: median(pure), firstRun, concurrency, folders, startup, serve };
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

const photosPerSecond = (line) => line.photos / (line.wall / 1000);
const rows = [];
for (const device of devices) {
  const r = results[device];
  rows.push([
    `${device}: session.run (median of ${runs}; first ${ms(r.firstRun)} ms)`,
    `${ms(r.pure)} ms`,
    '',
    '',
    '',
    '',
  ]);
  for (const line of r.folders)
    rows.push([
      `${device}: folder at ${line.size}, ${line.processes > 1 ? `${line.processes} processes, ` : ''}concurrency ${line.concurrency}${line.concurrency === r.concurrency ? ' (default)' : ''}, pool ${line.pool}`,
      `${ms(line.wall)} ms`,
      `${photosPerSecond(line).toFixed(2)} photos/s`,
      pct(line.main),
      pct(line.gpuBusy),
      mib(line.maxRss),
    ]);
  for (const [requested, time] of Object.entries(r.startup))
    rows.push([`--device ${requested}: start-up to the first result (median)`, `${ms(time)} ms`, '', '', '', '']);
  rows.push([`${device}: rmbg serve, 8 clients`, '', `${r.serve.rps.toFixed(2)} requests/s`, '', '', '']);
}
const defaultFull = (device, pool = POOLS.at(-1)) =>
  results[device].folders.find(
    (f) => f.size === 'full' && f.concurrency === results[device].concurrency && f.pool === pool && f.processes === 1,
  );
const ratios = [];
for (const device of devices)
  ratios.push([
    `${device}: folder at full, pool ${POOLS.at(-1)} ÷ pool 4 (time)`,
    ratio(defaultFull(device).wall / defaultFull(device, 4).wall, 3),
  ]);
if (results.gpu) {
  const preview = results.gpu.folders.find((f) => f.size === 'preview');
  const twoProcesses = results.gpu.folders.find((f) => f.processes === 2);
  ratios.push(['GPU ÷ CPU: session.run', ratio(results.gpu.pure / results.cpu.pure, 3)]);
  ratios.push([
    'GPU, folder at full: 2 processes ÷ 1 (photos/s)',
    ratio(photosPerSecond(twoProcesses) / photosPerSecond(defaultFull('gpu')), 3),
  ]);
  ratios.push([
    'CPU ÷ GPU: folder at full, defaults (throughput of the GPU)',
    ratio(defaultFull('cpu').wall / defaultFull('gpu').wall, 3),
  ]);
  ratios.push([
    'GPU preview per photo ÷ one GPU session.run',
    ratio(preview.wall / photos.length / results.gpu.pure, 3),
  ]);
  ratios.push([
    '--device auto ÷ --device cpu: start-up to the first result',
    ratio(results.gpu.startup.auto / results.cpu.startup.cpu, 3),
  ]);
  ratios.push(['GPU ÷ CPU: rmbg serve requests/s', ratio(results.gpu.serve.rps / results.cpu.serve.rps, 3)]);
}
const report = [
  `# rmbg on the GPU against the CPU (${new Date().toISOString()})`,
  '',
  `Machine: ${cores} cores, ${cpus()[0]?.model ?? 'unknown CPU'}; GPU: ${verdict.gpu ? 'measured' : 'not measured'}: ${verdict.why}.`,
  `Folder: ${photos.length} photos (${copies > 1 ? `${copies} copies of ` : ''}the set), ${megapixels.toFixed(1)} MP${quick ? ' (--quick)' : ''}; model ${model ?? 'the default'}; pool: libuv's threads (UV_THREADPOOL_SIZE).`,
  '',
  table(['what', 'time', 'throughput', 'main thread busy', 'GPU busy', 'peak RSS'], rows),
  '',
  table(['ratio', 'value'], ratios),
  '',
].join('\n');
await writeFile(join(WORK, 'gpu-last-run.md'), report);
console.log(`\n${report}`);
