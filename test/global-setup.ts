// The run's one global set-up (vitest globalSetup): build and type-check, start the run's PostgreSQL, find a Node
// of a maintained line.
// One entry runs every step so that every teardown runs and a failed one fails the run: vitest skips the
// teardowns after one that throws and exits 0 over it (issue #31).

import type { TestProject } from 'vitest/node';
import { buildAndTypecheck } from './setup/build.js';
import { provideMaintainedNode } from './setup/maintained-node.js';
import { providePostgres } from './setup/postgres.js';

/** A step of the set-up; a function it returns (or resolves to) is run at the teardown. */
export type GlobalStep = (project: TestProject) => unknown;

export const projectSteps: GlobalStep[] = [buildAndTypecheck, providePostgres, provideMaintainedNode];

/** Runs `steps` in order; the teardown it returns runs each step's teardown, last first, and fails the run if any throws. */
export async function runSteps(project: TestProject, steps: GlobalStep[]): Promise<() => Promise<void>> {
  const teardowns: (() => unknown)[] = [];
  const teardown = async () => {
    const errors: unknown[] = [];
    for (const step of teardowns.reverse()) {
      try {
        await step();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) {
      process.exitCode = 1; // vitest only logs a teardown's error
      throw new AggregateError(errors, `the test run's global teardown failed: ${errors.map(String).join('; ')}`);
    }
  };
  try {
    for (const step of steps) {
      const stepTeardown = await step(project);
      if (typeof stepTeardown === 'function') teardowns.push(stepTeardown as () => unknown);
    }
  } catch (error) {
    await teardown().catch(() => {}); // the set-up's own error is the one to report
    throw error;
  }
  return teardown;
}

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return runSteps(project, projectSteps);
}
