// rmbg as the bench drives it: the built engine (dist/) and the real folder batch, with the CLI's options.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './inputs.mjs';

/** Whose build is measured: this checkout's, or RMBG_BENCH_CHECKOUT's (a baseline: a folder with its dist/, and its
 * models/ and node_modules/ reachable from there, e.g. as links), for a before/after in fresh processes. */
const CHECKOUT = process.env.RMBG_BENCH_CHECKOUT || ROOT;
const dist = (path) => pathToFileURL(join(CHECKOUT, 'dist', path)).href;

/** What `rmbg remove DIR --local` uses: the CLI's default size (full) and format (auto). Set by loadRmbg. */
export let BENCH_OPTIONS;

export async function loadRmbg() {
  if (!existsSync(join(CHECKOUT, 'dist', 'engine', 'index.js')))
    throw new Error(`${join(CHECKOUT, 'dist')} is missing: run \`npm run build\` first`);
  const [
    { createEngine },
    { runBatch },
    { localRemover },
    { discoverInputs },
    { CALLER_DEFAULT_OPTIONS },
    { concurrencyFor },
  ] = await Promise.all([
    import(dist('engine/index.js')),
    import(dist('batch/run-batch.js')),
    import(dist('batch/remover.js')),
    import(dist('batch/discover-inputs.js')),
    import(dist('api/options.js')),
    import(dist('engine/runtime/device-report.js')),
  ]);
  BENCH_OPTIONS = CALLER_DEFAULT_OPTIONS;
  return {
    // The CPU unless a bench asks for another device: on a machine with a GPU, auto would pick it.
    createEngine: (options = {}) => createEngine({ device: 'cpu', ...options }),
    defaultConcurrency: concurrencyFor('cpu'), // what `rmbg remove --device cpu` runs at
    /** The whole folder through runBatch (read, process, atomic write, journal), as `rmbg remove DIR` does. */
    async runFolder(engine, dir, outputDir, concurrency, options = BENCH_OPTIONS) {
      const { items } = await discoverInputs([dir], { recursive: false, outputDir });
      return runBatch({
        items,
        outputDir,
        options,
        remover: localRemover(engine),
        concurrency,
        overwrite: true,
        retryFailed: false,
        onEvent: () => {},
      });
    },
  };
}
