// A Node of a maintained line for the tests of what rmbg does there and Node 20 cannot (a restart with fixed malloc
// thresholds, process.execve: test/e2e/memory-soak.test.ts, malloc-thresholds.test.ts): RMBG_TEST_NODE where set,
// else this Node where it can, else a Node 24 that test/install-test-node.sh fetches once from the npm registry.

import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** That Node's path; '' where none could be had (the tests that need it skip, saying so). */
    maintainedNode: string;
  }
}

/** The global set-up's step: provides `maintainedNode`. */
export function provideMaintainedNode(project: TestProject): void {
  project.provide('maintainedNode', maintainedNode());
}

function maintainedNode(): string {
  if (process.env.RMBG_TEST_NODE) return process.env.RMBG_TEST_NODE;
  if (typeof (process as { execve?: unknown }).execve === 'function') return process.execPath;
  const script = path.join(import.meta.dirname, '..', 'install-test-node.sh');
  try {
    return execFileSync('bash', [script], { encoding: 'utf8', timeout: 180_000 }).trim();
  } catch (error) {
    process.stderr.write(`no Node 24 for the tests that need one (${(error as Error).message.split('\n')[0]})\n`);
    return '';
  }
}
