// rmbg fixes glibc's malloc thresholds by starting itself again (bin/malloc-tuning.js) where Node can (22.15 and
// later: process.execve), and `rmbg doctor` says how it runs; a user's own setting wins. Run on this Node and on
// the set-up's Node of a maintained line (test/setup/maintained-node.ts), so both sides of the line are seen. What
// the thresholds do to a long run's memory: memory-soak.test.ts.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import sharp from 'sharp';
import { describe, expect, inject, it } from 'vitest';
import { BIN, ROOT } from '../helpers/cli.js';
import { envWithoutMallocSettings, MALLOC_TUNABLES } from '../helpers/malloc-settings.js';

const NODES = [...new Set([process.execPath, inject('maintainedNode')])].filter(Boolean);

const run = (node: string, args: string[], env: Record<string, string> = {}, input?: Buffer) =>
  execa(node, [BIN, ...args], {
    cwd: ROOT,
    env: envWithoutMallocSettings(env),
    extendEnv: false,
    reject: false,
    input,
    encoding: 'buffer',
  });

const allocatorOf = async (node: string, env: Record<string, string> = {}) => {
  const result = await run(node, ['doctor', '--json'], env);
  return JSON.parse(Buffer.from(result.stdout).toString()).allocator as { thresholds: string; fix?: string };
};

describe.each(NODES)('rmbg on %s', (node) => {
  const canRestart = execFileSync(node, ['-p', "typeof process.execve === 'function'"]).toString().trim() === 'true';

  it(`runs with fixed thresholds where Node can restart it, and says how to fix them where it cannot`, async () => {
    const allocator = await allocatorOf(node);
    if (canRestart) expect(allocator.thresholds).toBe(`fixed thresholds (GLIBC_TUNABLES=${MALLOC_TUNABLES})`);
    else {
      expect(allocator.thresholds).toMatch(/^dynamic thresholds/);
      expect(allocator.fix).toContain(`start it with GLIBC_TUNABLES=${MALLOC_TUNABLES}`);
    }
  });

  it("keeps the user's own setting, and other tunables beside its own", async () => {
    expect((await allocatorOf(node, { GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' })).thresholds).toBe(
      'fixed thresholds (GLIBC_TUNABLES=glibc.malloc.mmap_threshold=65536)',
    );
    expect((await allocatorOf(node, { GLIBC_TUNABLES: 'glibc.pthread.rseq=1' })).thresholds).toBe(
      canRestart
        ? `fixed thresholds (GLIBC_TUNABLES=glibc.pthread.rseq=1:${MALLOC_TUNABLES})`
        : (await allocatorOf(node)).thresholds,
    );
  });

  it('after a restart, standard input and the arguments still reach the command', async () => {
    const photo = readFileSync(path.join(ROOT, 'samples', 'rocket.jpg'));
    const result = await run(node, ['remove', '-', '--local', '--size', 'medium', '--format', 'png'], {}, photo);
    expect(result.exitCode).toBe(0);
    const { format, width, height } = await sharp(Buffer.from(result.stdout)).metadata();
    const source = await sharp(photo).metadata();
    expect({ format, width, height }).toEqual({ format: 'png', width: source.width, height: source.height });
  });
});
