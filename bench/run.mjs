#!/usr/bin/env node
// npm run bench: rmbg's speed on a folder of real photos, against pure inference and against the peer
// (@imgly/background-removal-node), in one process run so the ratios share the machine's load of the moment.
// Not part of CI: it takes minutes and installs the peer on first run. Writes bench/.work/last-run.{md,json}.
//
// Usage: node bench/run.mjs [--quick] [--repeat=N] [--no-peer] [--model=NAME] [--concurrency=1,2,3]
//        node bench/run.mjs --device gpu [...]: the GPU against the CPU provider instead (bench/gpu.mjs)
//        node bench/run.mjs --formats [...]: 12 MP HEIC photos against the same as JPEG (bench/photo-formats.mjs)
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { basename, join } from 'node:path';
import { ROOT, median, modelInputTensor } from './lib/inputs.mjs';
import { mib, ms, ratio, sum, table } from './lib/markdown.mjs';
import { ensurePeerInstalled, startPeer } from './lib/peer.mjs';
import { prepareLargePhoto, preparePhotos } from './lib/photo-set.mjs';
import { removeTimes, serveProbe } from './lib/cli-probes.mjs';
import { BENCH_OPTIONS, loadRmbg } from './lib/rmbg.mjs';

const flag = (name, fallback) => {
  const arg = process.argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (!arg) return fallback;
  return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : true;
};

// `--device gpu` as npm passes it (two words), or `--device=gpu`.
if (
  flag('device', 'cpu') === 'gpu' ||
  (process.argv.includes('--device') && process.argv[process.argv.indexOf('--device') + 1] === 'gpu')
) {
  await import('./gpu.mjs');
  process.exit(0);
}
// `--formats`: a folder of 12 MP HEIC photos against the same as JPEG (bench/photo-formats.mjs).
if (process.argv.includes('--formats')) {
  await import('./photo-formats.mjs');
  process.exit(0);
}
const quick = flag('quick', false) === true;
const repeat = Number(flag('repeat', 2));
const usePeer = flag('peer', true) === true && !process.argv.includes('--no-peer');
const model = flag('model', undefined);
const STAGES = ['probe', 'decode', 'inference', 'mask', 'compose', 'encode'];
const WORK = join(ROOT, 'bench', '.work');

function build() {
  // Other modules' type errors must not stop the bench: tsc still emits, and only the engine and batch are used.
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json')],
      { stdio: 'pipe' },
    );
  } catch (error) {
    console.warn(
      `warning: tsc reported errors (bench goes on with what it emitted):\n${String(error.stdout).split('\n').slice(0, 5).join('\n')}`,
    );
  }
}

function probeMemory(args) {
  const out = execFileSync(process.execPath, [join(ROOT, 'bench', 'memory-probe.mjs'), ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out.trim().split('\n').pop());
}

const log = (line) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

build();
const rmbg = await loadRmbg();
const concurrencies = String(flag('concurrency', [...new Set([1, rmbg.defaultConcurrency, 3])].sort().join(',')))
  .split(',')
  .map(Number);
await mkdir(WORK, { recursive: true });
const { dir: photoDir, photos } = await preparePhotos(WORK, { quick });
const names = photos.map((p) => basename(p.file));
log(`${photos.length} photos in ${photoDir}; ${repeat} pass(es); options ${JSON.stringify(BENCH_OPTIONS)}`);

let started = performance.now();
const engine = await rmbg.createEngine({ model });
const modelName = engine.session.model.name;
const ourLoadMs = performance.now() - started;
const inputs = await Promise.all(photos.map((p) => readFile(p.file)));
const tensors = await Promise.all(photos.map((p) => modelInputTensor(p.file)));
started = performance.now();
await engine.cutOut(inputs[0], BENCH_OPTIONS); // warm-up: the first run plans and allocates
const ourWarmupMs = performance.now() - started;
log(`rmbg: model ${modelName} loaded in ${ms(ourLoadMs)} ms, warm-up ${ms(ourWarmupMs)} ms`);

let peer = null;
let peerUnavailable = usePeer ? ensurePeerInstalled() : 'skipped (--no-peer)';
let peerWarmup;
if (!peerUnavailable) {
  try {
    peer = await startPeer();
    peerWarmup = await peer.warmup(photos[0].file);
    log(
      `peer: @imgly/background-removal-node ${peerWarmup.version} ready (model load + first image ${ms(peerWarmup.ms)} ms)`,
    );
  } catch (error) {
    peerUnavailable = `it failed to start: ${error.message.split('\n')[0]}`;
    peer = null;
  }
}
if (peerUnavailable) log(`PEER UNAVAILABLE: ${peerUnavailable}`);

/** CPU time of this whole process (all threads: the inference worker's, libvips', zlib's), ms. */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

async function pureRun(tensor, cpu) {
  const input = tensor.slice(); // run() moves its input to the inference worker thread
  const t = performance.now();
  const c = cpuMs();
  await engine.session.run(input);
  if (cpu) cpu.push(cpuMs() - c);
  return performance.now() - t;
}

const passes = [];
for (let pass = 1; pass <= repeat; pass++) {
  const singles = [];
  for (let i = 0; i < photos.length; i++) {
    // Pure inference just before and just after the end-to-end run: the load of a shared machine drifts, and
    // the mean of the two brackets the run it is compared with.
    const pureCpu = [];
    const before = await pureRun(tensors[i], pureCpu);
    const t = performance.now();
    const c = cpuMs();
    const result = await engine.cutOut(inputs[i], BENCH_OPTIONS);
    const e2eCpu = cpuMs() - c;
    const e2e = performance.now() - t;
    const pure = (before + (await pureRun(tensors[i], pureCpu))) / 2;
    // The CPU the call spent beyond a pure inference, spread over every core, is the least time it can add:
    // the physical floor of its ratio to pure inference on this machine.
    const extraCpu = e2eCpu - (pureCpu[0] + pureCpu[1]) / 2;
    const floor = (pure + Math.max(0, extraCpu) / availableParallelism()) / pure;
    const peerRun = peer ? await peer.remove(photos[i].file) : undefined;
    singles.push({
      name: names[i],
      pure,
      e2e,
      extraCpu,
      floor,
      timings: result.timings,
      out: `${result.width}×${result.height} ${result.format}`,
      outBytes: result.data.length,
      peer: peerRun?.ms,
      peerBytes: peerRun?.bytes,
    });
    log(
      `pass ${pass} ${names[i]}: pure ${ms(pure)} ms, rmbg ${ms(e2e)} ms (${ratio(e2e / pure)}, in-pipeline inference ${ms(result.timings.inference)} ms)${peerRun ? `, peer ${ms(peerRun.ms)} ms` : ''}`,
    );
  }
  // Each folder run is bracketed by pure runs too: its inference bound is N × their mean.
  const folders = [];
  let pureBefore = await pureRun(tensors[0]);
  for (const concurrency of concurrencies) {
    const outDir = join(WORK, 'out', `c${concurrency}`);
    await rm(outDir, { recursive: true, force: true });
    const t = performance.now();
    const summary = await rmbg.runFolder(engine, photoDir, outDir, concurrency);
    const wall = performance.now() - t;
    if (summary.failed) throw new Error(`folder run failed for ${summary.failedInputs.join(', ')}`);
    const pureAfter = await pureRun(tensors[0]);
    const bound = (photos.length * (pureBefore + pureAfter)) / 2;
    pureBefore = pureAfter;
    folders.push({ concurrency, wall, bound });
    log(
      `pass ${pass} folder, concurrency ${concurrency}: ${ms(wall)} ms, inference bound ${ms(bound)} ms (${ratio(bound / wall)})`,
    );
  }
  const peerFolder = peer ? (await peer.folder(photos.map((p) => p.file))).ms : undefined;
  if (peer) log(`pass ${pass} peer folder: ${ms(peerFolder)} ms`);
  passes.push({ singles, folders, peerFolder });
}

// Start-up (issue #9: "from process start to the first result, minus one inference"): `rmbg remove photo --local`
// in fresh processes, from spawn to its first result and to its exit, minus one steady inference of the same
// photo (pure runs just before and after, in this process).
const startupIndex = Math.max(
  0,
  photos.findIndex((p) => p.width === 640),
);
const startupPhoto = photos[startupIndex];
const startupPureBefore = await pureRun(tensors[startupIndex]);
const startupTimes = await removeTimes(startupPhoto.file, 3, model);
const startupPure = (startupPureBefore + (await pureRun(tensors[startupIndex]))) / 2;
const startupOverheads = startupTimes.map((t) => t.firstResult - startupPure);
const startupToExit = startupTimes.map((t) => t.exit - startupPure);
log(
  `start-up: rmbg remove ${names[startupIndex]} --local: first result ${startupTimes.map((t) => ms(t.firstResult)).join(', ')} ms, exit ${startupTimes.map((t) => ms(t.exit)).join(', ')} ms; one inference ${ms(startupPure)} ms; overhead median ${ms(median(startupOverheads))} ms (to exit ${ms(median(startupToExit))} ms)`,
);

await engine.close();
const peerMaxRss = peer ? await peer.close() : undefined;

log('memory: fresh processes');
const largest = photos[photos.length - 1];
const large50 = await prepareLargePhoto(WORK);
const memImage = probeMemory(['image', largest.file, model ?? '']);
const memFolder = probeMemory([
  'folder',
  photoDir,
  join(WORK, 'out', 'memory'),
  String(rmbg.defaultConcurrency),
  ...(model ? [model] : []),
]);
const mem50 = probeMemory(['image', large50.file, model ?? '', JSON.stringify({ size: '50MP', format: 'jpg' })]);
log('serve: first request vs later ones, then 8 concurrent 4000×3000 requests');
const serve = await serveProbe({ small: startupPhoto.file, large: largest.file, model });
const serveFirstRatio = serve.requests[0] / median(serve.requests.slice(1));
log(
  `serve: ready in ${ms(serve.readyMs)} ms; requests ${serve.requests.map((r) => ms(r)).join(', ')} ms (first / median of later ${ratio(serveFirstRatio, 3)}); 8 concurrent ${ms(serve.concurrentMs)} ms; peak RSS ${mib(serve.maxRss)}`,
);

// ---- report ----
const passCols = (fn) => passes.map((p, i) => fn(p, i));
const md = [];
md.push(`## Run of ${new Date().toISOString()}`);
md.push(
  `Machine: ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), ${mib(totalmem())}; node ${process.version}; model ${modelName}; ${photos.length} photos; options size=${BENCH_OPTIONS.size} format=${BENCH_OPTIONS.format}; load average at end ${(
    await import('node:os')
  )
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}.`,
);
md.push(
  `rmbg model load ${ms(ourLoadMs)} ms (+ warm-up ${ms(ourWarmupMs)} ms); peer ${peer || peerWarmup ? `model load + first image ${ms(peerWarmup?.ms)} ms` : `UNAVAILABLE: ${peerUnavailable}`}.`,
);

md.push('\n### Single image (one at a time): end-to-end vs pure `session.run`, and vs the peer');
md.push(
  table(
    [
      'image',
      'input',
      'result',
      ...passCols((_, i) => `pure ms p${i + 1}`),
      ...passCols((_, i) => `rmbg ms p${i + 1}`),
      ...passCols((_, i) => `rmbg/pure p${i + 1}`),
      ...passCols((_, i) => `peer ms p${i + 1}`),
      ...passCols((_, i) => `peer/rmbg p${i + 1}`),
    ],
    photos.map((p, j) => [
      names[j],
      `${p.width}×${p.height}`,
      passes[0].singles[j].out,
      ...passCols((q) => ms(q.singles[j].pure)),
      ...passCols((q) => ms(q.singles[j].e2e)),
      ...passCols((q) => ratio(q.singles[j].e2e / q.singles[j].pure)),
      ...passCols((q) => ms(q.singles[j].peer)),
      ...passCols((q) => ratio(q.singles[j].peer / q.singles[j].e2e)),
    ]),
  ),
);
const worst = passCols((q) => Math.max(...q.singles.map((s) => s.e2e / s.pure)));
const overall = passCols((q) => sum(q.singles.map((s) => s.e2e)) / sum(q.singles.map((s) => s.pure)));
md.push(
  `\nrmbg/pure over all images: ${overall.map((r) => ratio(r, 3)).join(' / ')}; worst image: ${worst.map((r) => ratio(r, 3)).join(' / ')} (target ≤ 1.10×). pure = mean of a session.run just before and just after.`,
);
md.push(
  `\nLow-noise view of the same runs: end-to-end / the inference stage inside that very run (both timed in one call, so the drifting load of the machine cancels), and the time outside inference. Physical floor: the CPU time the call spent beyond a pure inference (decoding, resizing, composing, encoding, on every thread), divided by the ${availableParallelism()} cores, added to the pure inference: no scheduling of that work can make the ratio lower on this machine.`,
);
md.push(
  table(
    [
      'image',
      ...passCols((_, i) => `rmbg / in-run inference p${i + 1}`),
      ...passCols((_, i) => `outside inference ms p${i + 1}`),
      ...passCols((_, i) => `CPU beyond inference ms p${i + 1}`),
      ...passCols((_, i) => `floor of rmbg/pure p${i + 1}`),
    ],
    photos.map((_, j) => [
      names[j],
      ...passCols((q) => ratio(q.singles[j].e2e / q.singles[j].timings.inference, 3)),
      ...passCols((q) => ms(q.singles[j].e2e - q.singles[j].timings.inference)),
      ...passCols((q) => ms(q.singles[j].extraCpu)),
      ...passCols((q) => ratio(q.singles[j].floor, 3)),
    ]),
  ),
);

md.push(
  '\n### Per-stage time, ms (engine `timings`; decode includes waiting for the model-input decode, mask includes the output-pixel decode still running; for PNG results compose runs inside encode, band by band)',
);
md.push(
  table(
    ['image', 'pass', ...STAGES, 'sum', 'result bytes', 'peer bytes'],
    passes.flatMap((q, i) =>
      q.singles.map((s) => [
        s.name,
        `p${i + 1}`,
        ...STAGES.map((stage) => ms(s.timings[stage])),
        ms(sum(Object.values(s.timings))),
        s.outBytes.toLocaleString('en-US'),
        s.peerBytes?.toLocaleString('en-US') ?? '–',
      ]),
    ),
  ),
);

md.push(`\n### Folder (${photos.length} photos, real batch: read, process, atomic write, journal)`);
md.push(
  table(
    [
      'run',
      ...passCols((_, i) => `wall ms p${i + 1}`),
      ...passCols((_, i) => `inference bound ms p${i + 1}`),
      ...passCols((_, i) => `bound/wall p${i + 1}`),
      ...passCols((_, i) => `peer/rmbg p${i + 1}`),
    ],
    [
      ...concurrencies.map((c) => {
        const run = (q) => q.folders.find((f) => f.concurrency === c);
        return [
          `rmbg, concurrency ${c}${c === rmbg.defaultConcurrency ? ' (default)' : ''}`,
          ...passCols((q) => ms(run(q).wall)),
          ...passCols((q) => ms(run(q).bound)),
          ...passCols((q) => ratio(run(q).bound / run(q).wall)),
          ...passCols((q) => ratio(q.peerFolder / run(q).wall)),
        ];
      }),
      [
        'peer, one after another',
        ...passCols((q) => ms(q.peerFolder)),
        ...passCols(() => ''),
        ...passCols(() => ''),
        ...passCols(() => '1.00×'),
      ],
    ],
  ),
);
md.push(
  '\nInference bound = N × pure session.run (mean of the runs just before and after that folder run). Targets: bound/wall ≥ 0.90×; peer/rmbg ≥ 3.2× on the folder.',
);

md.push('\n### Peak RSS (fresh process each)');
md.push(
  table(
    ['run', 'RSS after model load', 'peak RSS', 'ms'],
    [
      [
        `rmbg, one ${largest.width}×${largest.height} image`,
        mib(memImage.afterModelLoadRss),
        mib(memImage.maxRss),
        ms(memImage.ms),
      ],
      [
        `rmbg, folder of ${photos.length}, concurrency ${rmbg.defaultConcurrency}`,
        mib(memFolder.afterModelLoadRss),
        mib(memFolder.maxRss),
        ms(memFolder.ms),
      ],
      [
        `rmbg, one ${large50.width}×${large50.height} JPG, --size 50MP --format jpg`,
        mib(mem50.afterModelLoadRss),
        mib(mem50.maxRss),
        ms(mem50.ms),
      ],
      ['`rmbg serve`, 8 concurrent 4000×3000 requests (VmHWM)', '–', mib(serve.maxRss), ms(serve.concurrentMs)],
      ...(peerMaxRss ? [['peer process, whole bench', '–', mib(peerMaxRss), '–']] : []),
    ],
  ),
);
md.push('\n### Start-up and `rmbg serve`');
md.push(
  table(
    ['measure', 'runs', 'median'],
    [
      [
        `\`rmbg remove ${names[startupIndex]} --local\`, fresh process: spawn → first result (its JSON line, the file in place)`,
        startupTimes.map((t) => ms(t.firstResult)).join(', '),
        ms(median(startupTimes.map((t) => t.firstResult))),
      ],
      [
        'the same: spawn → exit',
        startupTimes.map((t) => ms(t.exit)).join(', '),
        ms(median(startupTimes.map((t) => t.exit))),
      ],
      ['one steady inference of that photo (pure, this process)', ms(startupPure), ''],
      [
        'start-up overhead = first result − one inference (target ≤ 600 ms)',
        startupOverheads.map((o) => ms(o)).join(', '),
        ms(median(startupOverheads)),
      ],
      ['the same to exit: exit − one inference', startupToExit.map((o) => ms(o)).join(', '), ms(median(startupToExit))],
      ['`rmbg serve`: spawn → listening (model loaded and warmed)', ms(serve.readyMs), ''],
      [
        `\`rmbg serve\`: sequential requests of ${names[startupIndex]}, ms`,
        serve.requests.map((r) => ms(r)).join(', '),
        `first / later ${ratio(serveFirstRatio, 3)} (target ≤ 1.10×)`,
      ],
    ],
  ),
);
const folderDefault = passes.map((q) => q.folders.find((f) => f.concurrency === rmbg.defaultConcurrency));
const big = photos.length - 1;
md.push('\n### Issue #9 targets, this run');
md.push(
  table(
    ['target', 'this run (per pass)', 'median'],
    [
      [
        `one ${largest.width}×${largest.height} photo, end-to-end ÷ pure inference ≤ 1.10×`,
        passes.map((q) => ratio(q.singles[big].e2e / q.singles[big].pure, 3)).join(' / '),
        ratio(median(passes.map((q) => q.singles[big].e2e / q.singles[big].pure)), 3),
      ],
      [
        `the same, ÷ the inference inside that call`,
        passes.map((q) => ratio(q.singles[big].e2e / q.singles[big].timings.inference, 3)).join(' / '),
        '',
      ],
      [
        `the same, its physical floor on ${availableParallelism()} cores (pure + CPU beyond inference ÷ cores)`,
        passes.map((q) => ratio(q.singles[big].floor, 3)).join(' / '),
        ratio(median(passes.map((q) => q.singles[big].floor)), 3),
      ],
      [
        `folder of ${photos.length}, wall ÷ inference bound (concurrency ${rmbg.defaultConcurrency})`,
        folderDefault.map((f) => ratio(f.wall / f.bound, 3)).join(' / '),
        ratio(median(folderDefault.map((f) => f.wall / f.bound)), 3),
      ],
      [
        'start-up overhead (to the first result) ≤ 600 ms',
        startupOverheads.map((o) => ms(o)).join(', '),
        `${ms(median(startupOverheads))} ms`,
      ],
      ['the same to exit', startupToExit.map((o) => ms(o)).join(', '), `${ms(median(startupToExit))} ms`],
      ['serve: first request within 10 % of later ones', ratio(serveFirstRatio, 3), ''],
      [`peak RSS, folder ≤ 1.5 GB`, mib(memFolder.maxRss), ''],
      [`peak RSS, one 50 MP JPG at --size 50MP --format jpg ≤ 2.0 GB`, mib(mem50.maxRss), ''],
      [`peak RSS, rmbg serve under 8 concurrent requests < 2 GB`, mib(serve.maxRss), ''],
      [
        'folder: ≥ 3.2× the peer',
        passes.map((q, i) => (q.peerFolder ? ratio(q.peerFolder / folderDefault[i].wall) : '–')).join(' / '),
        passes.every((q) => q.peerFolder)
          ? ratio(median(passes.map((q, i) => q.peerFolder / folderDefault[i].wall)))
          : '–',
      ],
    ],
  ),
);
const report = md.join('\n');
console.log(`\n${report}\n`);
await writeFile(join(WORK, 'last-run.md'), `${report}\n`);
await writeFile(
  join(WORK, 'last-run.json'),
  JSON.stringify(
    {
      photos,
      modelName,
      ourLoadMs,
      peerWarmup,
      peerUnavailable,
      passes,
      memImage,
      memFolder,
      mem50,
      peerMaxRss,
      startupTimes,
      startupPure,
      startupOverheads,
      startupToExit,
      serve,
    },
    null,
    2,
  ),
);
log(`written: bench/.work/last-run.md and last-run.json`);
