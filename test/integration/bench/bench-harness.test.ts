// The bench drives rmbg through dist/ by its module paths and names (bench/lib/rmbg.mjs), which the compiler never
// checks: a rename in src/ once stopped every bench at start. A folder through the bench's batch, as a bench runs it.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../../bench/lib/identity-model.mjs';
// @ts-expect-error: the bench's plain JavaScript has no types
import { loadRmbg } from '../../../bench/lib/rmbg.mjs';
import { ROOT } from '../../helpers/cli.js';

const work = mkdtempSync(path.join(tmpdir(), 'rmbg-bench-harness-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the bench's rmbg", () => {
  it('loads from dist/ and runs a folder through the real batch', async () => {
    const model = path.join(work, 'identity.onnx');
    writeIdentityModel(model, 'input', 'output');
    const rmbg = await loadRmbg();
    expect(rmbg.defaultConcurrency).toBeGreaterThanOrEqual(1);
    const engine = await rmbg.createEngine({ model });
    try {
      const out = path.join(work, 'out');
      const summary = await rmbg.runFolder(engine, path.join(ROOT, 'samples'), out, 2);
      expect(summary).toMatchObject({ total: 4, done: 4, failed: 0 });
      expect(existsSync(path.join(out, 'rocket.png'))).toBe(true);
    } finally {
      await engine.close();
    }
  });
});
