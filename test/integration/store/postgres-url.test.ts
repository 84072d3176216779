// The store URL's own query parameters (docs/deploy.md's connection settings) are taken out of the URL before pg
// sees it, and everything else passes through as written: libpq's forms that are no WHATWG URL included.

import { describe, expect, it } from 'vitest';
import { POSTGRES_SETTINGS, postgresSettings } from '../../../src/store/postgres-driver.js';
import { openStore } from '../../../src/store/index.js';
import { redactedStoreUrl } from '../../../src/store/redact-url.js';
import { freshDatabase } from '../../helpers/postgres.js';
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

describe("the store URL's password", () => {
  it('is redacted in every form it may take: user:password@, password= and sslpassword= (any case, any place)', () => {
    for (const [url, shown] of [
      ['postgres://rmbg:s3cr%40t@db.example:5432/rmbg', 'postgres://rmbg:***@db.example:5432/rmbg'],
      ['postgresql://rmbg@db.example/rmbg?password=s3cret', 'postgresql://rmbg@db.example/rmbg?password=***'],
      [
        'postgres://rmbg@/rmbg?host=/var/run/postgresql&PASSWORD=s3cret&sslmode=require',
        'postgres://rmbg@/rmbg?host=/var/run/postgresql&PASSWORD=***&sslmode=require',
      ],
      [
        'postgres://rmbg:s3cret@db/rmbg?sslpassword=s3cret&password=s3cret',
        'postgres://rmbg:***@db/rmbg?sslpassword=***&password=***',
      ],
      ['postgres://db.example/rmbg?application_name=x', 'postgres://db.example/rmbg?application_name=x'],
      // Unencoded, as people type them: @ / : % ? # in the password (issue #38).
      ['postgres://rmbg:Zx9@q+T3@127.0.0.1:1/rmbg', 'postgres://rmbg:***@127.0.0.1:1/rmbg'],
      ['postgres://rmbg:Zx9/q+T3@127.0.0.1:1/rmbg', 'postgres://rmbg:***@127.0.0.1:1/rmbg'],
      ['postgres://rmbg:a:b%zz@db/rmbg?sslmode=require', 'postgres://rmbg:***@db/rmbg?sslmode=require'],
      ['postgres://rmbg:a?b#c@db/rmbg', 'postgres://rmbg:***@db/rmbg'],
    ]) {
      expect(redactedStoreUrl(url as string)).toBe(shown);
    }
  });

  it.each([
    ['@', 'postgres://rmbg:Zx9@q+T3@127.0.0.1:1/rmbg', 'io_error'],
    ['/', 'postgres://rmbg:Zx9/q+T3@127.0.0.1:1/rmbg', 'usage_error'],
    [':', 'postgres://rmbg:Zx9:q+T3@127.0.0.1:1/rmbg', 'io_error'],
    ['%', 'postgres://rmbg:Zx9%q+T3@127.0.0.1:1/rmbg', 'io_error'],
  ])('a password with %s in it shows nowhere when the store cannot open', async (_, url, code) => {
    const refused = await rejectionOf(openStore({ engine: 'postgres', url }));
    expect(refused).toMatchObject({ code, message: expect.stringContaining('postgres://rmbg:***@127.0.0.1:1/rmbg') });
    expect(refused.message).not.toMatch(/Zx9|q\+T3/);
  });

  it('a store opened with the password as a query parameter shows it nowhere', async () => {
    const url = new URL(await freshDatabase());
    const password = decodeURIComponent(url.password);
    url.password = '';
    url.searchParams.set('password', password);
    const store = await openStore({ engine: 'postgres', url: url.toString() });
    try {
      expect(store.path).not.toContain(password);
      expect(store.path).toContain('password=***');
    } finally {
      await store.close();
    }
  });

  it('comes from PGPASSWORD when the URL has none, so it need not be on the command line', async () => {
    const url = new URL(await freshDatabase());
    const password = decodeURIComponent(url.password);
    url.password = '';
    const saved = process.env.PGPASSWORD;
    try {
      process.env.PGPASSWORD = 'not-the-password';
      const refused = await rejectionOf(openStore({ engine: 'postgres', url: url.toString() }));
      expect(refused.message).toMatch(/password authentication failed/);
      process.env.PGPASSWORD = password;
      const store = await openStore({ engine: 'postgres', url: url.toString() });
      expect(await store.schemaVersion()).toBe(store.latestSchemaVersion);
      await store.close();
    } finally {
      if (saved === undefined) delete process.env.PGPASSWORD;
      else process.env.PGPASSWORD = saved;
    }
  });
});
