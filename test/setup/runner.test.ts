// The test runner's exit code tells the truth (issue #31): vitest with the project's config and global steps
// (test/fixtures/runner/), on fixture files outside the suite's include, exits non-zero when a test fails, a
// file fails to load, or a global set-up or teardown throws, and 0 when all pass; with the embedded PostgreSQL
// and with RMBG_TEST_POSTGRES_URL.

import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, inject, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const VITEST = path.join(ROOT, 'node_modules/vitest/vitest.mjs');

/** Runs vitest on the fixtures whose names contain `filter`; its exit code and all it printed. */
async function runFixtures(filter: string, env: Record<string, string | undefined> = {}) {
  const result = await execa(
    process.execPath,
    [VITEST, 'run', '--config', 'test/fixtures/runner/vitest.config.ts', filter],
    {
      cwd: ROOT,
      env: {
        NO_COLOR: '1',
        FORCE_COLOR: '0',
        RMBG_TEST_POSTGRES_URL: undefined,
        RMBG_RUNNER_FIXTURE_FAIL: undefined,
        ...env,
      },
      extendEnv: true,
      reject: false,
      all: true,
      timeout: 100_000,
    },
  );
  return { exitCode: result.exitCode, output: result.all ?? '' };
}

for (const postgres of ['embedded PostgreSQL', 'RMBG_TEST_POSTGRES_URL'] as const) {
  describe.concurrent(`vitest's exit code, with the ${postgres}`, () => {
    const env = () => (postgres === 'RMBG_TEST_POSTGRES_URL' ? { RMBG_TEST_POSTGRES_URL: inject('postgresUrl') } : {});

    it('is non-zero when a test fails, and the failure is printed', async () => {
      const { exitCode, output } = await runFixtures('fails.fixture', env());
      expect(output).toContain('fixture: an assertion that fails');
      expect(output).toMatch(/Tests\s+1 failed \(1\)/);
      expect(exitCode).toBe(1);
    });

    it('is 0 when every test passes', async () => {
      const { exitCode, output } = await runFixtures('passes.fixture', env());
      expect(output).toMatch(/Tests\s+1 passed \(1\)/);
      expect(exitCode).toBe(0);
    });
  });
}

describe.concurrent("vitest's exit code, with the embedded PostgreSQL, when the run itself breaks", () => {
  it('is non-zero when a test file fails to load', async () => {
    const { exitCode, output } = await runFixtures('fails-to-load.fixture');
    expect(output).toContain('fixture: this file fails to load');
    expect(exitCode).not.toBe(0);
  });

  it('is non-zero when a global set-up throws', async () => {
    const { exitCode, output } = await runFixtures('passes.fixture', { RMBG_RUNNER_FIXTURE_FAIL: 'setup' });
    expect(output).toContain('fixture: the global set-up failed');
    expect(exitCode).not.toBe(0);
  });

  it('is non-zero when a global teardown throws, after the tests passed', async () => {
    const { exitCode, output } = await runFixtures('passes.fixture', { RMBG_RUNNER_FIXTURE_FAIL: 'teardown' });
    expect(output).toMatch(/Tests\s+1 passed \(1\)/);
    expect(output).toContain('fixture: the global teardown failed');
    expect(exitCode).not.toBe(0);
  });
});
