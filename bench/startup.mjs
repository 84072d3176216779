#!/usr/bin/env node
// Start-up overhead of `rmbg remove photo --local` (issue #9: "from process start to the first result, minus one
// inference": ≤ 0.6 s): the command in a fresh process, from spawn to its first result (and to its exit), minus one
// steady inference of the same photo, timed in this process just before and after. With a
// second checkout (built, e.g. an earlier commit), both are timed in alternation, so their figures share the load.
// Usage: node bench/startup.mjs [rounds=3] [other-checkout]      (run `npm run build` first)
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { removeTimes } from './lib/cli-probes.mjs';
import { ROOT, median, modelInputTensor } from './lib/inputs.mjs';

const rounds = Number(process.argv[2] ?? 3);
const other = process.argv[3] ? resolve(process.argv[3]) : undefined;
const photo = join(ROOT, 'samples', 'rocket.jpg');
const { createEngine } = await import(pathToFileURL(join(ROOT, 'dist', 'engine', 'index.js')).href);
const engine = await createEngine();
const tensor = await modelInputTensor(photo);
const pure = async () => {
  const input = tensor.slice(); // run() moves its input to the worker thread: a copy, made before the clock starts
  const t = performance.now();
  await engine.session.run(input);
  return performance.now() - t;
};
await pure(); // the first run of a session is slower; the overhead is measured against a steady one

const clis = { this: join(ROOT, 'bin', 'rmbg.js'), ...(other ? { other: join(other, 'bin', 'rmbg.js') } : {}) };
const overheads = Object.fromEntries(Object.keys(clis).map((name) => [name, []]));
const toExit = Object.fromEntries(Object.keys(clis).map((name) => [name, []]));
for (let round = 1; round <= rounds; round++) {
  for (const [name, cli] of Object.entries(clis)) {
    const before = await pure();
    const [{ firstResult, exit }] = await removeTimes(photo, 1, undefined, cli);
    const inference = (before + (await pure())) / 2;
    overheads[name].push(firstResult - inference);
    toExit[name].push(exit - inference);
    console.log(
      `round ${round} ${name}: first result ${firstResult.toFixed(0)} ms, exit ${exit.toFixed(0)} ms, one inference ${inference.toFixed(0)} ms, overhead ${(firstResult - inference).toFixed(0)} ms (to exit ${(exit - inference).toFixed(0)} ms)`,
    );
  }
}
for (const [name, values] of Object.entries(overheads)) {
  const exits = toExit[name];
  console.log(
    `${name}${name === 'other' ? ` (${other})` : ''}: start-up overhead median ${median(values).toFixed(0)} ms [${values.map((v) => v.toFixed(0)).join(', ')}]; to exit ${median(exits).toFixed(0)} ms [${exits.map((v) => v.toFixed(0)).join(', ')}]`,
  );
}
await engine.close();
