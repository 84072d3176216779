#!/usr/bin/env node
// The pixel work alone under glibc's fixed malloc thresholds (issue #47): a folder through the real batch with the
// warm-key model (whose run costs next to nothing, as a fast GPU leaves the pipeline), in fresh processes
// (bench/memory-probe.mjs), with glibc's default (dynamic) thresholds and with the fixed ones bin/malloc-tuning.js
// gives rmbg, back to back, the order alternating by round. The table gives medians of wall and system time and
// fixed ÷ dynamic; each large buffer a fixed threshold maps afresh shows as system time (page faults).
// Usage: node bench/pixel-malloc.mjs [--rounds=3] [--copies=4] [--concurrency=N]
// Needs a build (npm run build). On Node 20 the variable is passed as bin/malloc-tuning.js would set it.
import { execFile } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { median, ROOT } from './lib/inputs.mjs';
import { ratio, table } from './lib/markdown.mjs';
import { preparePhotos } from './lib/photo-set.mjs';
import { loadRmbg } from './lib/rmbg.mjs';
import { writeWarmKeyModel } from './lib/warm-key-model.mjs';

const flag = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const rounds = Number(flag('rounds', '3'));
const concurrency = Number(flag('concurrency', (await loadRmbg()).defaultConcurrency));
const { MALLOC_TUNABLES } = createRequire(import.meta.url)(join(ROOT, 'bin', 'malloc-tuning.js'));
const WORK = join(ROOT, 'bench', '.work');
await mkdir(WORK, { recursive: true });
const { dir, photos } = await preparePhotos(WORK, { copies: Number(flag('copies', '4')) });
const model = writeWarmKeyModel(join(WORK, 'warm-key.onnx'));
const VARIANTS = { dynamic: '', fixed: MALLOC_TUNABLES };

/** One folder run in a fresh process with GLIBC_TUNABLES set to `tunables`: memory-probe's line. */
async function folderRun(tunables) {
  const out = join(WORK, 'out', 'pixel-malloc');
  const args = [join(ROOT, 'bench', 'memory-probe.mjs'), 'folder', dir, out, String(concurrency), model, 'cpu'];
  const { stdout } = await promisify(execFile)(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, GLIBC_TUNABLES: tunables },
    maxBuffer: 1 << 24,
  });
  await rm(out, { recursive: true, force: true });
  return JSON.parse(stdout.trim().split('\n').pop());
}

const runs = { dynamic: [], fixed: [] };
for (let round = 0; round < rounds; round++) {
  for (const variant of round % 2 ? ['fixed', 'dynamic'] : ['dynamic', 'fixed']) {
    const run = await folderRun(VARIANTS[variant]);
    runs[variant].push(run);
    console.error(
      `round ${round + 1} ${variant}: ${run.photos} photos, wall ${(run.ms / 1000).toFixed(2)} s, ` +
        `system ${(run.systemMs / 1000).toFixed(2)} s, ${run.minorFaults} faults, CPU ${(run.cpuMs / 1000).toFixed(2)} s, peak RSS ${run.maxRss >> 20} MiB`,
    );
  }
}
const med = (variant, key) => median(runs[variant].map((run) => run[key]));
const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;
console.log(`Node ${process.version}, ${photos.length} photos, concurrency ${concurrency}, ${rounds} pairs, medians\n`);
console.log(
  table(
    ['measure', 'dynamic', `fixed (${MALLOC_TUNABLES})`, 'fixed ÷ dynamic'],
    [
      [
        'wall',
        seconds(med('dynamic', 'ms')),
        seconds(med('fixed', 'ms')),
        ratio(med('fixed', 'ms') / med('dynamic', 'ms')),
      ],
      [
        'system time',
        seconds(med('dynamic', 'systemMs')),
        seconds(med('fixed', 'systemMs')),
        ratio(med('fixed', 'systemMs') / med('dynamic', 'systemMs')),
      ],
      [
        'CPU time',
        seconds(med('dynamic', 'cpuMs')),
        seconds(med('fixed', 'cpuMs')),
        ratio(med('fixed', 'cpuMs') / med('dynamic', 'cpuMs')),
      ],
      [
        'minor page faults',
        med('dynamic', 'minorFaults').toLocaleString('en'),
        med('fixed', 'minorFaults').toLocaleString('en'),
        ratio(med('fixed', 'minorFaults') / med('dynamic', 'minorFaults')),
      ],
      [
        'peak RSS',
        `${med('dynamic', 'maxRss') >> 20} MiB`,
        `${med('fixed', 'maxRss') >> 20} MiB`,
        ratio(med('fixed', 'maxRss') / med('dynamic', 'maxRss')),
      ],
    ],
  ),
);
