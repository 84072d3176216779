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

/** The settings folder a run gets unless it names one: never created, so no settings are read. */
export const NO_SETTINGS = path.join(tmpdir(), 'rmbg-e2e-no-settings');

export interface RunOptions
  extends Pick<Options, 'cwd' | 'input' | 'inputFile' | 'timeout' | 'stdout' | 'stdin' | 'encoding' | 'nodeOptions'> {
  /** Variables set for the run, over this process's environment without its RMBG_* ones; undefined unsets one. */
  env?: Record<string, string | undefined>;
  /** The settings folder (RMBG_CONFIG_DIR); default NO_SETTINGS. */
  configDir?: string;
  /** Extra node flags before bin/rmbg.js, e.g. ['--import', hook]. */
  nodeArgs?: string[];
}

/**
 * The environment of a run: this process's, minus every RMBG_* variable (a developer's RMBG_API_URL or
 * RMBG_DEVICE must not steer a test), with its own settings folder, then what the test sets.
 */
export function cliEnv(options: Pick<RunOptions, 'env' | 'configDir'> = {}): Record<string, string> {
  const merged: Record<string, string | undefined> = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RMBG_'))),
    RMBG_CONFIG_DIR: options.configDir ?? NO_SETTINGS,
    ...options.env,
  };
  return Object.fromEntries(
    Object.entries(merged).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

/**
 * The one way tests run the CLI: spawns `node [nodeArgs] bin/rmbg.js args…` in ROOT (or `cwd`) with cliEnv().
 * Never rejects: assert on exitCode, stdout and stderr. Returns execa's promise (a child process handle too).
 */
export function rmbg(args: string[], options: RunOptions = {}): ResultPromise<{ reject: false }> {
  const { env, configDir, nodeArgs = [], ...rest } = options;
  return execa(process.execPath, [...nodeArgs, BIN, ...args], {
    cwd: ROOT,
    timeout: 180_000,
    ...rest,
    env: cliEnv({ env, configDir }),
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
export function rmbgOnTerminal(
  args: string[],
  /** `input`: what the person types (an answer to a question), else nothing. */
  options: Pick<RunOptions, 'cwd' | 'env' | 'configDir'> & { input?: string } = {},
) {
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(' ');
  return execa('script', ['--quiet', '--return', '--command', command, '/dev/null'], {
    cwd: options.cwd ?? ROOT,
    env: cliEnv({ configDir: options.configDir, env: { TERM: 'xterm', ...options.env } }),
    extendEnv: false,
    reject: false,
    timeout: 180_000,
    ...(options.input === undefined ? { stdin: 'ignore' as const } : { input: options.input }),
  });
}

/** Parses --json output: one object per line. */
export function jsonLines(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
