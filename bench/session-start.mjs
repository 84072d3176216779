#!/usr/bin/env node
// Start-up of one ORT session as `rmbg remove photo --local` pays it, per session-option variant, each in a fresh
// process (interleaved rounds): import onnxruntime-node, InferenceSession.create from the cached optimised graph
// (~/.cache/rmbg/graphs, made by any first run of rmbg), then the first runs on a blank 1024² input.
// Usage: RUNS=2 node bench/session-start.mjs [rounds=2] [variant …]     (variants: see VARIANTS below)
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './lib/inputs.mjs';

const RUNS = Number(process.env.RUNS ?? 2);
const GRAPHS = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'rmbg', 'graphs');

const BASE = {
  executionProviders: ['cpu'],
  executionMode: 'sequential',
  intraOpNumThreads: 2,
  interOpNumThreads: 1,
  enableCpuMemArena: false,
  logSeverityLevel: 3,
  extra: { session: { intra_op: { allow_spinning: '0' } } },
};
const IN_PLACE = { use_ort_model_bytes_directly: '1', use_ort_model_bytes_for_initializers: '1' };
// `bytes`: the graph is handed to ORT as a buffer (rmbg reads the file first); otherwise as a path.
const VARIANTS = {
  'in place (rmbg now)': { graphOptimizationLevel: 'disabled', bytes: true, extra: { session: IN_PLACE } },
  'parsed from the file': { graphOptimizationLevel: 'disabled' },
  'from bytes, weights copied': {
    graphOptimizationLevel: 'disabled',
    bytes: true,
    extra: { session: { use_ort_model_bytes_directly: '1' } },
  },
  'from bytes, plain': { graphOptimizationLevel: 'disabled', bytes: true },
  'in place, opt basic': { graphOptimizationLevel: 'basic', bytes: true, extra: { session: IN_PLACE } },
  'in place, no mem pattern': {
    graphOptimizationLevel: 'disabled',
    enableMemPattern: false,
    bytes: true,
    extra: { session: IN_PLACE },
  },
  'in place, no prepacking': {
    graphOptimizationLevel: 'disabled',
    bytes: true,
    extra: { session: { ...IN_PLACE, disable_prepacking: '1' } },
  },
};

async function child(name) {
  const ortStart = performance.now();
  const ort = (await import('onnxruntime-node')).default;
  const importMs = performance.now() - ortStart;
  const graph = readdirSync(GRAPHS).find((f) => f.endsWith('.ort'));
  const { bytes, ...variant } = VARIANTS[name];
  const opts = { ...BASE, ...variant, extra: { session: { ...BASE.extra.session, ...variant.extra?.session } } };
  let t = performance.now();
  const source = join(GRAPHS, graph);
  // In place, ORT uses these bytes for as long as the session lives: they must stay referenced (rmbg's ModelSession
  // holds them); collected early, the runs below crash.
  const held = bytes ? readFileSync(source) : undefined;
  const session = await ort.InferenceSession.create(held ?? source, opts);
  const createMs = performance.now() - t;
  // CPU time (all threads) as well as wall time: on a shared machine the wall time swings with the others' load.
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const cpuAfterCreate = cpuMs();
  const cpuRuns = [];
  const input = new ort.Tensor('float32', new Float32Array(3 * 1024 * 1024).fill(0.1), [1, 3, 1024, 1024]);
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    t = performance.now();
    await session.run({ [session.inputNames[0]]: input }, ['output']);
    runs.push(performance.now() - t);
    cpuRuns.push(cpuMs());
  }
  await session.release();
  console.log(
    JSON.stringify({
      importMs,
      createMs,
      runs,
      cpuAfterCreate,
      cpuFirstRun: cpuRuns[0] - cpuAfterCreate,
      cpuLastRun: cpuRuns.at(-1) - cpuRuns.at(-2),
      heldBytes: held?.length,
    }),
  );
}

if (process.argv[2] === '--child') await child(process.argv[3]);
else {
  const rounds = Number(process.argv[2] ?? 2);
  const names = process.argv.length > 3 ? process.argv.slice(3) : Object.keys(VARIANTS);
  if (!existsSync(GRAPHS)) throw new Error(`no cached graph in ${GRAPHS}: run rmbg once first`);
  const results = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    for (const name of names) {
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', name], {
        encoding: 'utf8',
      });
      const result = JSON.parse(out.trim().split('\n').pop());
      results[name].push(result);
      console.log(
        `round ${r + 1} ${name.padEnd(40)} import ${result.importMs.toFixed(0)} ms, create ${result.createMs.toFixed(0)} ms, runs ${result.runs.map((x) => x.toFixed(0)).join(' / ')} ms; CPU ms: start to session ${result.cpuAfterCreate.toFixed(0)}, first run ${result.cpuFirstRun.toFixed(0)}, last run ${result.cpuLastRun.toFixed(0)}`,
      );
    }
  }
  for (const name of names) {
    const rs = results[name];
    console.log(
      `${name.padEnd(40)} create median ${median(rs.map((x) => x.createMs)).toFixed(0)} ms; create + first run ${median(rs.map((x) => x.createMs + x.runs[0])).toFixed(0)} ms; fastest later run ${median(rs.map((x) => Math.min(...x.runs.slice(1)))).toFixed(0)} ms; CPU: to session ${median(rs.map((x) => x.cpuAfterCreate)).toFixed(0)} ms, first run ${median(rs.map((x) => x.cpuFirstRun)).toFixed(0)} ms, last run ${median(rs.map((x) => x.cpuLastRun)).toFixed(0)} ms`,
    );
  }
}
