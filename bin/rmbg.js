#!/usr/bin/env node
// CommonJS (bin/package.json), so that this runs before libuv's thread pool starts: an ES module's loader starts
// it while reading the module, and the pool's size is read once, when it starts.
const { availableParallelism } = require('node:os');
const { dieWithParent, runWithFixedMallocThresholds } = require('./malloc-tuning.js');

// First, before any thread starts: glibc's malloc as a long run needs it (malloc-tuning.js).
dieWithParent();
runWithFixedMallocThresholds(() => {
  // sharp's pipelines and the PNG encoder's bands run on this pool; libuv's default of 4 threads left a GPU idle
  // on 16 cores (bench/RESULTS.md, "Issue #26"). One per core, never fewer than the default; the user's value wins.
  process.env.UV_THREADPOOL_SIZE ??= String(Math.max(4, availableParallelism()));
  import('../dist/cli/main.js').then(({ main }) => main(process.argv));
});
