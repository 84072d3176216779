// src/'s import graph, read from its files: each TypeScript module of src/ and the modules of src/ it imports
// (relative specifiers: static, type-only, re-exports and import()), for tests of its shape.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const SRC = path.join(import.meta.dirname, '..', '..', 'src');

/** Every .ts file under `dir`, relative to src/ with forward slashes. */
function sourceFiles(src: string, dir = src): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(src, full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')
      ? [path.relative(src, full).split(path.sep).join('/')]
      : [];
  });
}

/** `from './x.js'`, `import './x.js'` and `import('./x.js')`: the relative specifiers in a module's text. */
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

/** The files of src/ that `file` imports, by their paths relative to src/ (the .js of a specifier is its .ts). */
function importsOf(file: string, text: string): string[] {
  const targets = [...text.matchAll(RELATIVE_IMPORT)].map((match) =>
    path.posix.normalize(path.posix.join(path.posix.dirname(file), (match[1] as string).replace(/\.js$/, '.ts'))),
  );
  return [...new Set(targets)];
}

/** The graph's loops, each as the files in it in import order, the first repeated at the end; one per loop found
 * by a depth-first walk (a loop inside a bigger tangle may show as several). */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const onPath: string[] = [];
  const visit = (file: string): void => {
    const at = onPath.indexOf(file);
    if (at !== -1) {
      cycles.push([...onPath.slice(at), file]);
      return;
    }
    if (done.has(file)) return;
    onPath.push(file);
    for (const target of graph.get(file) ?? []) visit(target);
    onPath.pop();
    done.add(file);
  };
  for (const file of [...graph.keys()].sort()) visit(file);
  return cycles;
}

/** Each module of src/ (relative to `src`, default src/) and the modules it imports. */
export function importGraph(src = SRC): Map<string, string[]> {
  return new Map(
    sourceFiles(src).map((file) => [file, importsOf(file, readFileSync(path.join(src, file), 'utf8'))] as const),
  );
}
