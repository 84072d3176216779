import { configDefaults, defineConfig, type ViteUserConfig } from 'vitest/config';
import { RecordedDurationSequencer } from './test/setup/file-order.js';

/** The options every project takes, and the runner's fixture config too (test/fixtures/runner/vitest.config.ts). */
export const SHARED_OPTIONS: NonNullable<ViteUserConfig['test']> = {
  // Tests run the real ONNX model on a 2-core machine: generous timeouts, few workers.
  testTimeout: 120_000,
  hookTimeout: 120_000,
  pool: 'forks',
  // 3 files at a time on 2 cores: many e2e tests wait (Retry-After, timeouts, process start), so a third
  // file uses the idle CPU (measured: 2 workers kept the cores ~70 % busy).
  maxWorkers: 3,
  fileParallelism: true,
  // Inert unless a test sets HELD_INFERENCE_GATE before its engine starts: then the model's runs wait for the
  // test's word (test/helpers/inference-gate.ts), for tests of what happens while an image is in the model.
  execArgv: ['--import', './test/fixtures/held-inference.mjs'],
};

/** Builds dist/ and type-checks src/ and test/ once per run (a type error stops the run); then starts the run's
 * one PostgreSQL (or uses RMBG_TEST_POSTGRES_URL). One entry, so every teardown runs. */
export const GLOBAL_SETUP = 'test/global-setup.ts';

// Two projects: `unit` (test/unit/: in-process, no dist/, no PostgreSQL, no real model; `npm run test:unit`)
// and `integration` (everything else, after the global set-up). `npm test` runs both.
export default defineConfig({
  test: {
    ...SHARED_OPTIONS,
    reporters: ['default'],
    sequence: { sequencer: RecordedDurationSequencer },
    projects: [
      {
        extends: true,
        // Not isolated: a worker's unit files share its module cache, which halves their CPU time (measured:
        // 44 s to 22 s); each file restores the spies and timers it changes.
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/unit/**'],
          globalSetup: [GLOBAL_SETUP],
        },
      },
    ],
  },
});
