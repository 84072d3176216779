import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ and type-checks src/ and test/ once per run (a type error stops the run); then starts the
    // run's one PostgreSQL (or uses RMBG_TEST_POSTGRES_URL). One entry, so every teardown runs.
    globalSetup: ['test/global-setup.ts'],
    // Tests run the real ONNX model on a 2-core machine: generous timeouts, few workers.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // 3 files at a time on 2 cores: many e2e tests wait (Retry-After, timeouts, process start), so a third
    // file uses the idle CPU (measured: 2 workers kept the cores ~70 % busy).
    maxWorkers: 3,
    fileParallelism: true,
    reporters: ['default'],
    // Inert unless a test sets HELD_INFERENCE_GATE before its engine starts: then the model's runs wait for the
    // test's word (test/helpers/inference-gate.ts), for tests of what happens while an image is in the model.
    execArgv: ['--import', './test/fixtures/held-inference.mjs'],
  },
});
