// src/platform is the floor (docs/architecture.md): what the operating system gives. It may import the contract
// (src/api) and nothing else of rmbg, so that every room above can stand on it without importing itself back.

import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { moduleArrows, readImportGraph } from '../../../scripts/lib/import-graph.mjs';
import { ROOT } from '../../helpers/cli.js';

describe('src/platform', () => {
  it('imports only src/api of the rest of rmbg', () => {
    const arrows = moduleArrows(readImportGraph(path.join(ROOT, 'src')));
    const upward = arrows.filter(([from, to]) => from === 'platform' && to !== 'api').map((a) => a.join(' → '));
    expect(upward).toEqual([]);
    // The walk sees the floor's imports: its one arrow, to the contract.
    expect(arrows).toContainEqual(['platform', 'api']);
  });
});
