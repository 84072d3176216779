#!/usr/bin/env node
// The pixel work alone under glibc's fixed malloc thresholds (issue #47): a folder through the real batch with the
// warm-key model (whose run costs next to nothing, as a fast GPU leaves the pipeline), in fresh processes
// (bench/memory-probe.mjs), with glibc's default (dynamic) thresholds and with the fixed ones bin/malloc-tuning.js
// gives rmbg (and another allocator with --preload=PATH: lib/malloc-variants.mjs), back to back, the order turning
// by round. The table gives medians and each set-up ÷ dynamic; each large buffer a fixed threshold maps afresh
// shows as page faults and system time.
// Usage: node bench/pixel-malloc.mjs [--rounds=3] [--copies=4] [--concurrency=N] [--preload=PATH]
// Needs a build (npm run build). On Node 20 the variable is passed as bin/malloc-tuning.js would set it.
import { execFile } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { median, ROOT } from './lib/inputs.mjs';
import { mallocVariants } from './lib/malloc-variants.mjs';
import { ratio, table } from './lib/markdown.mjs';
import { preparePhotos } from './lib/photo-set.mjs';
import { loadRmbg } from './lib/rmbg.mjs';
import { writeWarmKeyModel } from './lib/warm-key-model.mjs';

const flag = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const rounds = Number(flag('rounds', '3'));
const concurrency = Number(flag('concurrency', (await loadRmbg()).defaultConcurrency));
const WORK = join(ROOT, 'bench', '.work');
await mkdir(WORK, { recursive: true });
const { dir, photos } = await preparePhotos(WORK, { copies: Number(flag('copies', '4')) });
const model = writeWarmKeyModel(join(WORK, 'warm-key.onnx'));
const variants = mallocVariants();

/** One folder run in a fresh process with `env` added: memory-probe's line. */
async function folderRun(env) {
  const out = join(WORK, 'out', 'pixel-malloc');
  const args = [join(ROOT, 'bench', 'memory-probe.mjs'), 'folder', dir, out, String(concurrency), model, 'cpu'];
  const { stdout } = await promisify(execFile)(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    maxBuffer: 1 << 24,
  });
  await rm(out, { recursive: true, force: true });
  return JSON.parse(stdout.trim().split('\n').pop());
}

const runs = new Map(variants.map((variant) => [variant.name, []]));
for (let round = 0; round < rounds; round++) {
  const turned = [...variants.slice(round % variants.length), ...variants.slice(0, round % variants.length)];
  for (const { name, env } of turned) {
    const run = await folderRun(env);
    runs.get(name).push(run);
    console.error(
      `round ${round + 1} ${name}: ${run.photos} photos, wall ${(run.ms / 1000).toFixed(2)} s, ` +
        `system ${(run.systemMs / 1000).toFixed(2)} s, ${run.minorFaults} faults, CPU ${(run.cpuMs / 1000).toFixed(2)} s, peak RSS ${run.maxRss >> 20} MiB`,
    );
  }
}
const med = (name, key) => median(runs.get(name).map((run) => run[key]));
const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;
const MEASURES = [
  ['wall', 'ms', seconds],
  ['system time', 'systemMs', seconds],
  ['CPU time', 'cpuMs', seconds],
  ['minor page faults', 'minorFaults', (count) => count.toLocaleString('en')],
  ['peak RSS', 'maxRss', (bytes) => `${bytes >> 20} MiB`],
];
console.log(
  `Node ${process.version}, ${photos.length} photos, concurrency ${concurrency}, ${rounds} rounds, medians\n`,
);
console.log(
  table(
    ['measure', ...variants.map(({ label }) => label), ...variants.slice(1).map(({ name }) => `${name} ÷ dynamic`)],
    MEASURES.map(([measure, key, format]) => [
      measure,
      ...variants.map(({ name }) => format(med(name, key))),
      ...variants.slice(1).map(({ name }) => ratio(med(name, key) / med('dynamic', key))),
    ]),
  ),
);
