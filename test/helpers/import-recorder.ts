// Which packages a run of the CLI loads, seen from inside node: a module-resolution hook (node:module register,
// loaded with --import before bin/rmbg.js) appends every resolved URL to a file. Every import of our ESM code goes
// through it, bare package names included: the log names commander for --help, so it would name sharp too.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { tempDir } from './cli.js';

export function importRecorder(): { nodeArgs: string[]; loaded: () => string[] } {
  const dir = tempDir('rmbg-imports-');
  const log = path.join(dir, 'resolved.log');
  writeFileSync(log, '');
  writeFileSync(
    path.join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(log, result.url + '\\n');
  return result;
}
`,
  );
  writeFileSync(
    path.join(dir, 'register.mjs'),
    `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(path.join(dir, 'hooks.mjs')).href)}, { data: { log: ${JSON.stringify(log)} } });
`,
  );
  return {
    nodeArgs: ['--import', pathToFileURL(path.join(dir, 'register.mjs')).href],
    loaded: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
  };
}

/** The npm packages among resolved URLs. */
export const packagesIn = (urls: string[]): Set<string | undefined> =>
  new Set(urls.map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1]).filter(Boolean));
