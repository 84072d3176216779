// A module that runs on its own, in a worker thread or a child process, is loaded by its path. A worker cannot load
// .ts, so run from the source (the tests, through vitest), the path names the built copy in dist/ that the run's
// global set-up builds.

/** The URL of the entry module `path` (from src/, e.g. 'engine/runtime/pixel-worker-entry.js'): in dist/ whether
 * this runs from dist/ or from src/. */
export function builtEntry(path: string): URL {
  const fromSource = import.meta.url.endsWith('.ts');
  return new URL(fromSource ? `../../dist/${path}` : `../${path}`, import.meta.url);
}
