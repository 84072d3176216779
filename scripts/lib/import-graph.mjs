// The import graph of src/, read from the source (relative imports, `import type` and `import()` included): the
// arrows between modules that docs/architecture.md draws, and the loops a test forbids. Plain JS so that both the
// docs script and the tests read it without a build.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

/** Every .ts file under `srcDir`, relative to it, sorted. */
function sourceFiles(srcDir, sub = '') {
  return readdirSync(path.join(srcDir, sub), { withFileTypes: true })
    .flatMap((entry) => {
      const name = path.posix.join(sub, entry.name);
      if (entry.isDirectory()) return sourceFiles(srcDir, name);
      return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [name] : [];
    })
    .sort();
}

/** file → the files it imports (paths relative to `srcDir`, `.js` specifiers mapped to their `.ts` source). */
export function readImportGraph(srcDir) {
  const graph = new Map();
  for (const file of sourceFiles(srcDir)) {
    const text = readFileSync(path.join(srcDir, file), 'utf8');
    const targets = new Set();
    for (const match of text.matchAll(IMPORT)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), match[1]));
      targets.add(target.replace(/\.js$/, '.ts'));
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/** The module a file belongs to: its folder under src/ (engine's rooms apart), or the file for one at the top. */
export function moduleOf(file) {
  const parts = file.split('/');
  if (parts.length === 1) return parts[0].replace(/\.ts$/, '');
  if (parts[0] === 'engine') return parts.length === 2 ? 'engine' : `engine/${parts[1]}`;
  return parts[0];
}

/** The arrows between modules, [from, to] sorted, each once. */
export function moduleArrows(graph) {
  const arrows = new Set();
  for (const [file, targets] of graph) {
    for (const target of targets) {
      const from = moduleOf(file);
      const to = moduleOf(target);
      if (from !== to && to !== 'types') arrows.add(`${from} ${to}`);
    }
  }
  return [...arrows].sort().map((arrow) => arrow.split(' '));
}

/** The loops of a directed graph (Map node → nodes), each as its nodes in order from its smallest, once. */
export function loopsOf(graph) {
  const loops = new Map();
  const visit = (start, node, trail) => {
    for (const next of graph.get(node) ?? []) {
      if (next === start) {
        const loop = [...trail];
        const first = loop.indexOf([...loop].sort()[0]);
        const turned = [...loop.slice(first), ...loop.slice(0, first)];
        loops.set(turned.join(' → '), turned);
      } else if (next > start && !trail.includes(next)) visit(start, next, [...trail, next]);
    }
  };
  for (const node of [...graph.keys()].sort()) visit(node, node, [node]);
  return [...loops.values()];
}

/** The module map as a Mermaid flowchart, arrows pointing at what is imported. */
export function mermaidOf(arrows) {
  const id = (name) => name.replace(/[^a-z0-9]/gi, '_');
  const names = [...new Set(arrows.flat())].sort();
  return [
    'flowchart TD',
    ...names.map((name) => `  ${id(name)}["${name}"]`),
    ...arrows.map(([from, to]) => `  ${id(from)} --> ${id(to)}`),
  ].join('\n');
}

const BLOCK = /(<!-- import-map -->\n```mermaid\n)[\s\S]*?(```\n<!-- \/import-map -->)/;

/** `page` with its import map drawn anew from `srcDir`. */
export function withCurrentMap(page, srcDir) {
  if (!BLOCK.test(page)) throw new Error('the page has no <!-- import-map --> block');
  return page.replace(
    BLOCK,
    (_, open, close) => `${open}${mermaidOf(moduleArrows(readImportGraph(srcDir)))}\n${close}`,
  );
}
