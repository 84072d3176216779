// A module that runs on its own (a worker thread's or a child process's entry, or a module a test runs in a
// process of its own) is loaded by its path. A worker cannot load .ts, so run from the source (the tests, through
// vitest), the path names the built copy in dist/ that the run's global set-up builds.

/** The URL of the built module `path` (from src/, e.g. 'engine/runtime/pixel-worker-entry.js'): in dist/ whether
 * this runs from dist/ or from src/. */
export function builtModule(path: string): URL {
  const fromSource = import.meta.url.endsWith('.ts');
  return new URL(fromSource ? `../../dist/${path}` : `../${path}`, import.meta.url);
}
