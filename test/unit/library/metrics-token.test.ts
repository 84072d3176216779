// Where `rmbg serve` takes its /metrics token from: the flag, a file, or RMBG_METRICS_TOKEN; a token nobody
// could send (empty, several lines) or two sources at once are refused before the server starts.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { metricsTokenOf } from '../../../src/library/metrics-token.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-metrics-token-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function file(content: string): string {
  files += 1;
  const path = join(dir, `token-${files}`);
  writeFileSync(path, content, { mode: 0o600 });
  return path;
}

describe('metricsTokenOf', () => {
  it('reads the file (surrounding whitespace ignored), else the flag, else RMBG_METRICS_TOKEN; an empty variable is unset', () => {
    expect(metricsTokenOf({ metricsTokenFile: file('  s3cret-from-file\n') }, { RMBG_METRICS_TOKEN: 'from-env' })).toBe(
      's3cret-from-file',
    );
    expect(metricsTokenOf({ metricsToken: 'from-flag' }, { RMBG_METRICS_TOKEN: 'from-env' })).toBe('from-flag');
    expect(metricsTokenOf({}, { RMBG_METRICS_TOKEN: 'from-env' })).toBe('from-env');
    expect(metricsTokenOf({}, { RMBG_METRICS_TOKEN: '' })).toBeUndefined();
    expect(metricsTokenOf({}, {})).toBeUndefined();
  });

  it('refuses with usage_error: both flags, a missing or empty file, a token of several lines, an empty flag', () => {
    const cases: Array<[Parameters<typeof metricsTokenOf>[0], NodeJS.ProcessEnv, RegExp]> = [
      [{ metricsToken: 'a', metricsTokenFile: file('b') }, {}, /give `metricsToken` or `metricsTokenFile`, not both/],
      [{ metricsTokenFile: join(dir, 'absent') }, {}, /`metricsTokenFile`: cannot read .*absent \(ENOENT\)/],
      [{ metricsTokenFile: file(' \n') }, {}, /the metrics token is empty/],
      [{ metricsTokenFile: file('one\ntwo\n') }, {}, /more than one line/],
      [{ metricsToken: '' }, {}, /`metricsToken`: the metrics token is empty/],
      [{}, { RMBG_METRICS_TOKEN: 'a\nb' }, /RMBG_METRICS_TOKEN: the metrics token holds more than one line/],
    ];
    for (const [options, env, message] of cases) {
      expect(() => metricsTokenOf(options, env)).toThrow(message);
      expect(() => metricsTokenOf(options, env)).toThrow(expect.objectContaining({ code: 'usage_error' }));
    }
  });
});
