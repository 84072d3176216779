// The test's side of test/fixtures/held-inference.mjs: start `rmbg serve` with `gate.nodeArgs` and `gate.env`
// (or an engine in this process inside `gate.whileStarting`), close() to hold the model's next runs, await held()
// to know one is in the model, open() to let them end. close(n) lets n runs through first (those already
// waiting, then new ones), for a test that needs n images done and the next one in the model.

import { existsSync, mkdtempSync, rmSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './cli.js';

export interface InferenceGate {
  nodeArgs: string[];
  env: Record<string, string>;
  /** Runs `start` with the gate in this process's environment, which engines started meanwhile then obey. */
  whileStarting<T>(start: () => Promise<T>): Promise<T>;
  /** Runs from now on (and those waiting) wait in the model until open(), but for the next `passing` of them. */
  close(passing?: number): void;
  /** Resolves once a run waits in the model. */
  held(): Promise<void>;
  /** Resolves once the process started with `nodeArgs` has handled its `count`th SIGINT. */
  sigintTaken(count: number): Promise<void>;
  /** Lets the waiting runs (and later ones) go on. */
  open(): void;
  remove(): void;
}

export function inferenceGate(): InferenceGate {
  const dir = mkdtempSync(path.join(tmpdir(), 'rmbg-gate-'));
  const file = (name: string) => path.join(dir, name);
  /** Resolves once the hook has written `name`. */
  const appears = (name: string) =>
    new Promise<void>((resolve) => {
      const watcher = watch(dir, () => {
        if (existsSync(file(name))) {
          watcher.close();
          resolve();
        }
      });
      if (existsSync(file(name))) {
        watcher.close();
        resolve();
      }
    });
  return {
    nodeArgs: ['--import', pathToFileURL(path.join(ROOT, 'test/fixtures/held-inference.mjs')).href],
    env: { HELD_INFERENCE_GATE: dir },
    async whileStarting(start) {
      process.env.HELD_INFERENCE_GATE = dir;
      try {
        return await start();
      } finally {
        delete process.env.HELD_INFERENCE_GATE;
      }
    },
    close: (passing = 0) => writeFileSync(file('hold'), String(passing)),
    held: () => appears('held'),
    sigintTaken: (count) => appears(`sigint-${count}`),
    open: () => rmSync(file('hold'), { force: true }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
