// rmbg fixes glibc's malloc thresholds by starting itself again (bin/malloc-tuning.js) where Node can (22.15 and
// later: process.execve), `rmbg serve` by running in a child process where it cannot (Node 20), and `rmbg doctor`
// says how it runs; a user's own setting wins; a restart happens once at most, and one that fails leaves the command
// running as it is. Run on this Node and on the set-up's Node of a maintained line (test/setup/maintained-node.ts),
// so both sides of the line are seen. What the thresholds do to a long run's memory: memory-soak.test.ts.

import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import sharp from 'sharp';
import { afterAll, describe, expect, inject, it } from 'vitest';
// @ts-expect-error: the bench's plain JavaScript has no types
import { listeningUrl } from '../../bench/lib/serve-url.mjs';
import { servingPid } from '../../bench/lib/serving-process.mjs';
import { BIN, ROOT, removeTempDirs, tempDir } from '../helpers/cli.js';
import { envWithoutMallocSettings, MALLOC_TUNABLES } from '../helpers/malloc-settings.js';
import { writeIdentityModel } from '../helpers/onnx-writer.js';

const NODES = [...new Set([process.execPath, inject('maintainedNode')])].filter(Boolean);

const fixture = (name: string) => path.join(ROOT, 'test', 'fixtures', name);
/** Whether a process has ended (a zombie has: where no one reaps an orphan, its entry stays). */
const ended = (pid: number) => !existsSync(`/proc/${pid}`) || / Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

afterAll(removeTempDirs);

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

describe.each(NODES)('rmbg on %s, restarted in a way that goes wrong', (node) => {
  const canRestart = execFileSync(node, ['-p', "typeof process.execve === 'function'"]).toString().trim() === 'true';
  /** A command this Node restarts: any where it can (execve), else `rmbg serve` (in a child process). */
  const restarted = canRestart ? ['doctor', '--json'] : ['serve', '--help'];

  it('where glibc drops GLIBC_TUNABLES (a privileged process), it restarts once and the command runs', async () => {
    const starts = path.join(tempDir(), 'starts');
    const result = await run(node, restarted, {
      NODE_OPTIONS: `--require ${fixture('drop-glibc-tunables.cjs')}`,
      STARTS_FILE: starts,
    });
    expect(result.exitCode, Buffer.from(result.stderr).toString()).toBe(0);
    const given = readFileSync(starts, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(' ')[1]);
    expect(given).toEqual(['', MALLOC_TUNABLES]);
    if (canRestart) {
      const { allocator } = JSON.parse(Buffer.from(result.stdout).toString());
      expect(allocator.fix).toContain('privileged process');
    }
  });

  it('where starting Node again fails (its binary removed by an upgrade), the command goes on, saying so', async () => {
    const linked = path.join(tempDir(), 'node');
    linkSync(node, linked);
    const result = await run(linked, restarted, { NODE_OPTIONS: `--require ${fixture('remove-node-binary.cjs')}` });
    expect(result.exitCode).toBe(0);
    expect(Buffer.from(result.stderr).toString()).toContain(
      'rmbg: could not restart with fixed malloc thresholds (ENOENT); going on without',
    );
    expect(Buffer.from(result.stdout).toString()).toContain(canRestart ? '"allocator"' : 'Usage: rmbg serve');
  });
});

describe.skipIf(typeof (process as { execve?: unknown }).execve === 'function')(
  `rmbg serve on a Node that cannot restart itself (${process.version}): a child process with the thresholds`,
  () => {
    const serve = async () => {
      const dataDir = tempDir();
      const model = path.join(dataDir, 'identity.onnx');
      writeIdentityModel(model, 'input', 'output');
      const args = ['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--model', model];
      const child = execa(process.execPath, [BIN, ...args], {
        cwd: ROOT,
        env: envWithoutMallocSettings(),
        extendEnv: false,
        reject: false,
      });
      const url: string = await listeningUrl(child);
      const server = servingPid(child.pid as number);
      expect(server, 'the pid of the process that serves').not.toBe(child.pid);
      return { child, url, server };
    };

    it('serves from a child that has the thresholds; SIGTERM to the parent stops both, exit 0', async () => {
      const { child, url, server } = await serve();
      // As glibc left it: it parses GLIBC_TUNABLES in place, which cuts the string /proc shows at its first ':'.
      const environment = readFileSync(`/proc/${server}/environ`, 'utf8').split('\0');
      expect(environment).toContain(`GLIBC_TUNABLES=${MALLOC_TUNABLES.split(':')[0]}`);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      child.kill('SIGTERM');
      const result = await child;
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stderr).toContain('rmbg: SIGTERM: finishing requests in flight, then exiting');
      expect(ended(server)).toBe(true);
    });

    it("ends as its child did: the child's exit code, or the signal that killed it", async () => {
      const refused = await run(process.execPath, ['serve', '--port', 'none']);
      expect(refused.exitCode).toBe(2);
      const { child, server } = await serve();
      process.kill(server, 'SIGKILL');
      expect((await child).signal).toBe('SIGKILL');
    });

    it('a SIGKILL of the parent takes the child with it', async () => {
      const { child, url, server } = await serve();
      child.kill('SIGKILL');
      await child;
      await expect.poll(() => ended(server), { timeout: 10_000 }).toBe(true);
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    });
  },
);
