// Runs the real CLI as a user does (`node bin/rmbg.js …` over dist/), building dist/ first when src/ is newer.
// Test files run in parallel workers, so the build is guarded by a lock directory: one worker builds, the rest wait.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type Options, type ResultPromise } from 'execa';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(ROOT, 'bin/rmbg.js');
const BUILT = path.join(ROOT, 'dist/cli/main.js');
// The same lock as test/e2e/serve-harness.ts's build, so the two never run tsc over dist/ at once.
const LOCK = path.join(tmpdir(), `rmbg-e2e-build-${Buffer.from(ROOT).toString('hex').slice(-32)}.lock`);

function newestMtime(folder: string): number {
  let newest = 0;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

function builtAt(): number {
  try {
    return statSync(BUILT).mtimeMs;
  } catch {
    return 0;
  }
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Builds dist/ with `tsc -p .` unless it is newer than every file in src/. Safe to call from every test file. */
export function ensureBuilt(): void {
  if (builtAt() >= newestMtime(path.join(ROOT, 'src'))) return;
  for (const started = Date.now(); ; sleep(250)) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // Another worker is building; a lock older than 3 minutes belongs to a killed run.
      const age = Date.now() - (statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 180_000) rmSync(LOCK, { recursive: true, force: true });
      if (Date.now() - started > 240_000) throw new Error(`e2e build lock ${LOCK} held for 4 minutes`);
    }
  }
  try {
    if (builtAt() >= newestMtime(path.join(ROOT, 'src'))) return; // built by the worker we waited for
    try {
      execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], { cwd: ROOT, stdio: 'pipe' });
    } catch (error) {
      // tsc still emits with type errors (src/ is shared with work in progress); only a missing build is fatal.
      if (builtAt() === 0) throw error;
    }
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
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

export interface RunOptions extends Pick<Options, 'cwd' | 'input' | 'inputFile' | 'timeout' | 'stdout' | 'stdin' | 'encoding' | 'nodeOptions'> {
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
