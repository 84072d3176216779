// Before any test file runs: build dist/ (the e2e tests run the real CLI over it) and type-check the tests,
// failing the run on any type error. Incremental, so an unchanged tree costs a second or two.

import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

function tsc(args: string[], what: string): void {
  try {
    execFileSync(process.execPath, [TSC, ...args], { cwd: ROOT, stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(
      `${what} failed; no test runs on a tree that does not compile:\n${stdout?.toString() ?? ''}${stderr?.toString() ?? ''}`,
    );
  }
}

export function buildAndTypecheck(): void {
  const cache = path.join(ROOT, 'node_modules/.cache/rmbg-tsc');
  // tsc's incremental record says what it emitted, not whether dist/ is still there: a deleted dist/ is rebuilt.
  if (!existsSync(path.join(ROOT, 'dist/cli/main.js'))) rmSync(path.join(cache, 'build.tsbuildinfo'), { force: true });
  tsc(
    ['-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', path.join(cache, 'build.tsbuildinfo')],
    'building dist/ (tsc -p tsconfig.json)',
  );
  tsc(
    ['-p', 'tsconfig.test.json', '--incremental', '--tsBuildInfoFile', path.join(cache, 'typecheck.tsbuildinfo')],
    'type-checking the tests (tsc -p tsconfig.test.json)',
  );
}
