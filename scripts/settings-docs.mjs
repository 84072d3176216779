// Writes the docs' tables of flags and options from the settings tables (src/settings/docs-rows.ts), between
// their `<!-- settings: NAME -->` markers. Run with `npm run docs` (it builds first).
import { readFileSync, writeFileSync } from 'node:fs';
import { TABLES_BY_FILE, withCurrentTables } from '../dist/settings/docs-rows.js';

const root = new URL('..', import.meta.url);
for (const file of Object.keys(TABLES_BY_FILE)) {
  const path = new URL(file, root);
  const text = readFileSync(path, 'utf8');
  const current = withCurrentTables(text);
  if (current !== text) {
    writeFileSync(path, current);
    console.log(`updated ${file}`);
  }
}
