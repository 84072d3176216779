// docs/architecture.md's map of the modules is drawn from the code: a new arrow between modules (or one gone) fails
// here until `npm run docs` draws it, so the picture a newcomer reads is the code's.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { moduleArrows, readImportGraph, withCurrentMap } from '../../../scripts/lib/import-graph.mjs';
import { ROOT } from '../../helpers/cli.js';

const SRC = path.join(ROOT, 'src');

describe("the architecture page's map", () => {
  it('draws every arrow between modules that the code has, and no other', () => {
    const page = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
    expect(page, 'docs/architecture.md is out of date: run npm run docs').toBe(withCurrentMap(page, SRC));
  });

  it('reads arrows from imports of every kind', () => {
    const arrows = moduleArrows(readImportGraph(SRC)).map(([from, to]) => `${from} → ${to}`);
    // a static import, a type-only import and an import() of the code as it is
    expect(arrows).toEqual(expect.arrayContaining(['cli → batch', 'batch → engine', 'library → server']));
  });
});
