// Draws docs/architecture.md's map of the modules anew from src/'s imports, between its `<!-- import-map -->`
// markers. Run by `npm run docs`; test/unit/docs/architecture-map.test.ts fails when the page is out of date.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { withCurrentMap } from './lib/import-graph.mjs';

const page = fileURLToPath(new URL('../docs/architecture.md', import.meta.url));
const src = fileURLToPath(new URL('../src', import.meta.url));
const text = readFileSync(page, 'utf8');
const current = withCurrentMap(text, src);
if (current !== text) {
  writeFileSync(page, current);
  console.log('updated docs/architecture.md');
}
