// Many processes start at once on a lock left by a dead process: exactly one of them may hold it. Each racer
// is a real Node process over dist/ (the run's globalSetup builds it), holding what it got until all tried.

import { execa } from 'execa';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { builtModule } from '../../../src/platform/built-module.js';
import { ensureBuilt } from '../../helpers/cli.js';

const RACERS = 12;
const ROUNDS = 4;
const dirs: string[] = [];

beforeAll(ensureBuilt);

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Tries the lock, says 'got' or 'busy', and keeps what it got until its stdin closes. */
const RACER = `
import { acquirePidLock } from ${JSON.stringify(builtModule('platform/pid-lock.js').href)};
const lock = process.argv[1];
let said = 'busy';
try { acquirePidLock(lock, () => 'busy'); said = 'got'; } catch (error) { if (error.code !== 'usage_error') said = 'error ' + error.message; }
process.stdout.write(said + '\\n');
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
`;

async function deadPid(): Promise<number> {
  const child = execa('node', ['-e', '']);
  await child;
  return child.pid as number;
}

describe('acquirePidLock under racing starts', () => {
  it(`of ${RACERS} processes taking over a dead process's lock at once, exactly one holds it (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const dir = mkdtempSync(join(tmpdir(), 'rmbg-lock-race-'));
      dirs.push(dir);
      const lock = join(dir, 'serve.lock');
      writeFileSync(lock, String(await deadPid()));
      const racers = Array.from({ length: RACERS }, () =>
        execa('node', ['--input-type=module', '-e', RACER, lock], { reject: false }),
      );
      const said = await Promise.all(
        racers.map(
          (racer) =>
            new Promise<string>((resolve) => {
              let out = '';
              racer.stdout?.on('data', (chunk: Buffer) => {
                out += chunk.toString();
                if (out.includes('\n')) resolve(out.trim());
              });
              void racer.then(() => resolve(out.trim() || 'exited'));
            }),
        ),
      );
      for (const racer of racers) racer.stdin?.end();
      await Promise.all(racers);
      expect(
        said.filter((word) => word === 'got'),
        `round ${round}: ${said.join(', ')}`,
      ).toHaveLength(1);
      expect(said.filter((word) => word !== 'got' && word !== 'busy')).toEqual([]);
    }
  });
});
