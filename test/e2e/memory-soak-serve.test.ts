// A long run's memory levels off (issues #40, #46): `rmbg serve` under 180 requests of mixed photos, sizes and
// formats, truncated files among them, with the warm-key model (the pixels around the model are what allocate).
// rmbg fixes glibc's malloc thresholds by starting itself again (process.execve), which Node 20 cannot: there
// `rmbg serve` runs in a child process started with them, so the soak runs on this Node and on the set-up's Node
// of a maintained line. The server keeps its ledger in PostgreSQL, so any Node can run it. The folder's and the
// library's soaks are in memory-soak.test.ts.

import { describe, expect, it } from 'vitest';
// @ts-expect-error: the bench's plain JavaScript has no types
import { soakServe } from '../../bench/lib/memory-soak.mjs';
import { tempDir } from '../helpers/cli.js';
import { earlyAndLateMiB, ENV, MAX_GROWTH_MIB, NODE, SOAK_TIMEOUT_MS, soakInputs } from '../helpers/memory-soak.js';
import { freshDatabase } from '../helpers/postgres.js';

/** The Nodes `rmbg serve` is soaked on: this one (Node 20 here) and a maintained one. */
const SERVE_NODES = [...new Set([process.execPath, NODE])].filter(Boolean);
const inputs = soakInputs();

describe.each(SERVE_NODES)('memory of rmbg serve over a long run on %s', (node) => {
  it(
    'rmbg serve: 180 mixed requests, the RSS levels off, within 5 %',
    async () => {
      const store = await freshDatabase();
      const { rss, statuses } = await soakServe({
        node,
        dataDir: tempDir(),
        photos: inputs.photos,
        requests: 180,
        env: { ...ENV, RMBG_MODEL: inputs.model },
        flags: ['--store', store],
      });
      expect(statuses).toEqual({ 200: 162, 400: 18 });
      const { early, late } = earlyAndLateMiB(rss);
      const said = `RSS ${early.toFixed(1)} MiB early, ${late.toFixed(1)} MiB at the end`;
      expect(late - early, said).toBeLessThan(MAX_GROWTH_MIB);
      expect(late / early, said).toBeLessThan(1.05);
    },
    SOAK_TIMEOUT_MS,
  );
});
