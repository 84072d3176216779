// Runs the real CLI as a user does (`node bin/rmbg.js …` over dist/, which the run's globalSetup builds).

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type Options, type ResultPromise } from 'execa';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(ROOT, 'bin/rmbg.js');
const BUILT = path.join(ROOT, 'dist/cli/main.js');

/** dist/ is built by the run's globalSetup (test/global-setup.ts); this only says so if it is missing. */
export function ensureBuilt(): void {
  if (!existsSync(BUILT))
    throw new Error(`${BUILT} is missing: run the tests with vitest, whose globalSetup builds dist/`);
}

const made: string[] = [];
/** A fresh temp folder, removed by removeTempDirs() (call it in afterAll). */
export function tempDir(prefix = 'rmbg-e2e-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export interface RunOptions
  extends Pick<Options, 'cwd' | 'input' | 'inputFile' | 'timeout' | 'stdout' | 'stdin' | 'encoding' | 'nodeOptions'> {
  env?: Record<string, string | undefined>;
  /** Extra node flags before bin/rmbg.js, e.g. ['--import', hook]. */
  nodeArgs?: string[];
}

/**
 * Spawns `node [nodeArgs] bin/rmbg.js args…` with no inherited RMBG_* settings and a private settings dir.
 * Never rejects: assert on exitCode, stdout and stderr. Returns execa's promise (a child process handle too).
 */
export function rmbg(args: string[], options: RunOptions = {}): ResultPromise<{ reject: false }> {
  const { env = {}, nodeArgs = [], ...rest } = options;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RMBG_')));
  return execa(process.execPath, [...nodeArgs, BIN, ...args], {
    cwd: ROOT,
    timeout: 180_000,
    ...rest,
    env: { ...clean, RMBG_CONFIG_DIR: path.join(tmpdir(), 'rmbg-e2e-no-settings'), ...env },
    extendEnv: false,
    reject: false,
  }) as ResultPromise<{ reject: false }>;
}

/** Whether util-linux `script` is here to give the CLI a pseudo-terminal (rmbgOnTerminal). */
export const HAS_SCRIPT = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const shellQuote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * Runs the CLI with stdout and stderr on a pseudo-terminal (util-linux `script`), as a person at a terminal
 * sees it: progress bar and human summary rather than JSON lines. Both streams arrive merged in stdout.
 */
export function rmbgOnTerminal(args: string[], options: { cwd?: string } = {}) {
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(' ');
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RMBG_')));
  return execa('script', ['--quiet', '--return', '--command', command, '/dev/null'], {
    cwd: options.cwd ?? ROOT,
    env: { ...clean, RMBG_CONFIG_DIR: path.join(tmpdir(), 'rmbg-e2e-no-settings'), TERM: 'xterm' },
    extendEnv: false,
    reject: false,
    timeout: 180_000,
    stdin: 'ignore',
  });
}

/** Parses --json output: one object per line. */
export function jsonLines(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
