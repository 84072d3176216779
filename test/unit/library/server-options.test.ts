// createServer() takes the options of `rmbg serve`: the command's flags, the ServerOptions type and the table
// of docs/library.md name the same settings, so neither can gain one the other lacks.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/program.js';
import type { ServerOptions } from '../../../src/library/server-options.js';
import { ROOT } from '../../helpers/cli.js';

// Every key of ServerOptions, checked by the compiler both ways (a missing or an extra key does not compile).
const SERVER_OPTION_NAMES = Object.keys({
  host: true,
  port: true,
  dataDir: true,
  store: true,
  leaseTime: true,
  metricsToken: true,
  metricsTokenFile: true,
  trustProxy: true,
  creditsPerImage: true,
  rateLimit: true,
  maxQueue: true,
  processingTimeout: true,
  bodyTimeout: true,
  headersTimeout: true,
  maxConnections: true,
  maxUploads: true,
  maxUrlFetches: true,
  maxInFlightPerKey: true,
  maxAuthFailures: true,
  model: true,
  device: true,
  ui: true,
  allowPrivateUrls: true,
} satisfies Record<keyof ServerOptions, true>).sort();

describe('createServer options', () => {
  it('are the flags of `rmbg serve`, camelCased, and the rows of the createServer table in docs/library.md', () => {
    const serve = buildProgram().commands.find((command) => command.name() === 'serve');
    const flags = serve!.options.map((option) => option.attributeName()).sort();
    expect(flags).toEqual(SERVER_OPTION_NAMES);

    const doc = readFileSync(path.join(ROOT, 'docs/library.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## `createServer(options?)`'), doc.indexOf('## Errors'));
    const rows = [...section.matchAll(/^\| `(\w+)` \|/gm)].map((match) => match[1]).sort();
    expect(rows).toEqual(SERVER_OPTION_NAMES);
  });
});
