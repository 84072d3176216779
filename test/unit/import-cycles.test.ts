// No two modules of src/ import each other, directly or in a loop: a loop makes a reader open every file in it to
// understand any one, and its load order decides which of them sees the others' exports as undefined.

import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loopsOf, readImportGraph } from '../../scripts/lib/import-graph.mjs';
import { ROOT } from '../helpers/cli.js';

describe("src/'s imports", () => {
  const graph = readImportGraph(path.join(ROOT, 'src'));

  it('are read from every module, and each names a file that exists', () => {
    expect(graph.size).toBeGreaterThan(100);
    const missing = [...graph].flatMap(([file, targets]) =>
      targets.filter((t) => !graph.has(t)).map((t) => `${file} → ${t}`),
    );
    expect(missing).toEqual([]);
    // The walk sees imports of each kind: the engine's front door loads the pipeline with import().
    expect(graph.get('engine/index.ts')).toContain('engine/pipeline.ts');
  });

  it('form no loop: no two files import each other, directly or through others', () => {
    const loops = loopsOf(graph).map((loop) => [...loop, loop[0]].join(' → '));
    expect(loops, `import loops in src/:\n${loops.join('\n')}`).toEqual([]);
  });

  it('finds a loop where there is one, and names its files in order', () => {
    const tangled = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
    ]);
    expect(loopsOf(tangled)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});
