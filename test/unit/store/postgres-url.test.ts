// The store URL's own query parameters (docs/deploy.md's connection settings) are taken out of the URL before pg
// sees it, and everything else passes through as written: libpq's forms that are no WHATWG URL included.

import { describe, expect, it } from 'vitest';
import { POSTGRES_SETTINGS, postgresSettings } from '../../../src/store/postgres-driver.js';
import { rejectionOf } from '../../helpers/rejection.js';

const DEFAULTS = Object.fromEntries(
  Object.entries(POSTGRES_SETTINGS).map(([name, { default: value }]) => [name, value]),
);

describe('the PostgreSQL store URL', () => {
  it('a socket folder in host= (no WHATWG URL) passes through unchanged', () => {
    const url = 'postgres://rmbg@/rmbg?host=/var/run/postgresql';
    expect(postgresSettings(url)).toEqual({ connectionString: url, settings: DEFAULTS });
  });

  it("rmbg's parameters are taken out wherever they stand; the others keep their order and spelling", () => {
    expect(postgresSettings('postgres://rmbg@/rmbg?lock_timeout=0&host=/var/run/postgresql&pool_size=4')).toEqual({
      connectionString: 'postgres://rmbg@/rmbg?host=/var/run/postgresql',
      settings: { ...DEFAULTS, lock_timeout: 0, pool_size: 4 },
    });
    expect(
      postgresSettings(
        'postgres://u:p%40ss@db.example:5432/rmbg?sslmode=require&application_name=a%20b&statement_timeout=2500',
      ).connectionString,
    ).toBe('postgres://u:p%40ss@db.example:5432/rmbg?sslmode=require&application_name=a%20b');
    expect(postgresSettings('postgres://db/rmbg?connect_timeout=3')).toEqual({
      connectionString: 'postgres://db/rmbg',
      settings: { ...DEFAULTS, connect_timeout: 3 },
    });
    expect(postgresSettings('postgres://db/rmbg')).toEqual({
      connectionString: 'postgres://db/rmbg',
      settings: DEFAULTS,
    });
  });

  it('a bad value is a usage error naming the parameter', async () => {
    const refused = await rejectionOf(
      (async () => postgresSettings('postgres://rmbg@/rmbg?host=/tmp&lock_timeout=5s'))(),
    );
    expect([refused.code, refused.message]).toEqual([
      'usage_error',
      "the store URL's lock_timeout must be a whole number from 0 to 2147483647; got '5s'",
    ]);
  });
});
