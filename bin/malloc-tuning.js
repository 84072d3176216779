// glibc's malloc raises its mmap threshold to the size of each large block it frees (up to 32 MiB); past that,
// image-sized buffers come from per-thread arenas, whose free memory glibc keeps, so a long run's RSS climbs to
// each thread's worst case and stays there (bench/RESULTS.md, "Issue #40"). Fixed thresholds turn that off: a large
// buffer gets a mapping of its own, returned when it is freed. glibc reads them once, at start, from the environment.

/** glibc's own initial thresholds, fixed (setting either stops glibc from raising them). */
const MALLOC_TUNABLES = 'glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072';

/** Whether the environment fixes glibc's thresholds (ours after the restart, or the user's, which win): either
 * tunable, or its older variable. */
function mallocThresholdsFixed(env) {
  const tunables = (env.GLIBC_TUNABLES ?? '').split(':');
  return (
    tunables.some((tunable) => /^glibc\.malloc\.(mmap|trim)_threshold=/.test(tunable)) ||
    env.MALLOC_MMAP_THRESHOLD_ !== undefined ||
    env.MALLOC_TRIM_THRESHOLD_ !== undefined
  );
}

/** glibc's version where Node runs on it (by Node's report); undefined elsewhere (musl, macOS, Windows). */
function glibcVersion() {
  if (process.platform !== 'linux') return undefined;
  return process.report.getReport().header.glibcVersionRuntime;
}

/**
 * Where glibc's malloc runs with its default thresholds, starts this process again as itself (the same pid,
 * arguments and streams) with them fixed. Needs process.execve (Node 22.15, 23.11 and later); on Node 20 the process
 * goes on as it is (docs/deploy.md says how to set them by hand).
 */
function restartWithFixedMallocThresholds() {
  if (typeof process.execve !== 'function' || mallocThresholdsFixed(process.env)) return;
  if (glibcVersion() === undefined) return;
  const tunables = [process.env.GLIBC_TUNABLES, MALLOC_TUNABLES].filter(Boolean).join(':');
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    ...process.env,
    GLIBC_TUNABLES: tunables,
  });
}

module.exports = { MALLOC_TUNABLES, mallocThresholdsFixed, glibcVersion, restartWithFixedMallocThresholds };
