// Writes test/file-durations.json from vitest's record of the last run (node_modules/.vite/vitest), so that a fresh
// clone starts the long test files first too (test/setup/file-order.ts). Run it after a whole `npm test`.

import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const cacheDir = path.join(root, 'node_modules/.vite/vitest');
const seconds = {};
for (const entry of readdirSync(cacheDir)) {
  const { results } = JSON.parse(readFileSync(path.join(cacheDir, entry, 'results.json'), 'utf8'));
  for (const [file, { duration }] of results) {
    if (existsSync(path.join(root, file.slice(file.indexOf(':') + 1)))) seconds[file] = Math.round(duration / 100) / 10;
  }
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync(path.join(root, 'test/file-durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/file-durations.json: ${Object.keys(sorted).length} files`);
