// The throttle of failed keys protects the store, not only the answers: a flood of bad keys from one address
// (or one IPv6 /64) costs the store about the throttle's limit of key lookups, a valid key known from before is
// still served from that address (also one it never used: the set of valid keys knows it), and key lookups in
// progress at once are capped whatever the addresses.
// On the real SQLite store, counted at its boundary.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { throttledUnit } from '../../../src/service/auth-throttle.js';
import { createService, type Service } from '../../../src/service/index.js';
import type { RmbgError } from '../../../src/api/errors.js';
import { MAX_CONCURRENT_KEY_LOOKUPS } from '../../../src/service/key-lookups.js';
import { KEY_SET_KNOWN_WITHIN_S } from '../../../src/service/valid-keys.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { rejectionOf } from '../../helpers/rejection.js';
import { testEngine, TEST_SERVICE_LIMITS } from '../../helpers/sharp-test-engine.js';

let dir: string;
let store: Store;
let service: Service;
let key: string;
/** Key lookups that reached the store, and the most in progress at once. */
let lookups: number;
/** Every read of the key table: lookups, and the set of valid keys' change markers and reloads. */
let keyTableReads: number;
let inProgress: number;
let mostAtOnce: number;
/** While set, each lookup waits for it before going to the store (a database slow to answer). */
let gate: Promise<void> | undefined;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-auth-flood-'));
  store = await openStore(dir);
  ({ key } = await store.createAccountWithKey({ plan: 'pro', credits: 5 }));
  lookups = 0;
  keyTableReads = 0;
  inProgress = 0;
  mostAtOnce = 0;
  gate = undefined;
  const counted: Store = {
    ...store,
    keyChangeMarker: () => {
      keyTableReads += 1;
      return store.keyChangeMarker();
    },
    activeKeyHashes: () => {
      keyTableReads += 1;
      return store.activeKeyHashes();
    },
    accountForKey: async (apiKey) => {
      lookups += 1;
      keyTableReads += 1;
      inProgress += 1;
      mostAtOnce = Math.max(mostAtOnce, inProgress);
      try {
        await gate;
        return await store.accountForKey(apiKey);
      } finally {
        inProgress -= 1;
      }
    },
  };
  service = await createService({ store: counted, engine: testEngine(), ...TEST_SERVICE_LIMITS });
});

afterEach(async () => {
  await service.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const badKey = (i: number) => `bad-key-${i}`;

describe('a flood of bad keys', () => {
  it('600 from one address: fewer than 100 key lookups, 429 after the limit, a key valid before still served', async () => {
    // The customer behind the address used its key before the flood.
    expect((await service.getAccount(key, undefined, '203.0.113.7')).account).toBeDefined();
    const statuses = new Map<number, number>();
    for (let i = 0; i < 600; i++) {
      const error = await rejectionOf(service.getAccount(badKey(i), undefined, '203.0.113.7'));
      statuses.set(error.status, (statuses.get(error.status) ?? 0) + 1);
    }
    expect(lookups).toBeLessThan(100);
    expect(keyTableReads).toBeLessThan(100);
    expect(Object.fromEntries(statuses)).toEqual({ 403: 30, 429: 570 });
    const before = lookups;
    expect((await service.getAccount(key, undefined, '203.0.113.7')).account).toBeDefined();
    expect(lookups).toBe(before + 1); // looked up: it may have been revoked since
    // Another address is not throttled.
    expect((await rejectionOf(service.getAccount(badKey(0), undefined, '198.51.100.1'))).status).toBe(403);
  });

  it('a valid key this server never saw, from a throttled address: served, and the bad keys still 429', async () => {
    for (let i = 0; i < 30; i++) await rejectionOf(service.getAccount(badKey(i), undefined, '203.0.113.7'));
    expect((await rejectionOf(service.getAccount(badKey(30), undefined, '203.0.113.7'))).status).toBe(429);
    expect((await service.getAccount(key, undefined, '203.0.113.7')).account).toMatchObject({
      data: { attributes: { credits: { total: 5 } } },
    });
    expect((await rejectionOf(service.getAccount(badKey(31), undefined, '203.0.113.7'))).status).toBe(429);
    expect((await rejectionOf(service.getAccount(undefined, undefined, '203.0.113.7'))).status).toBe(429);
  });

  it('a key created after the start: at once from an address not throttled; from a throttled one, 429 with a Retry-After of a few seconds, then served within them', async () => {
    for (let i = 0; i < 30; i++) await rejectionOf(service.getAccount(badKey(i), undefined, '203.0.113.7'));
    const fresh = await store.createAccountWithKey({ plan: 'pro', credits: 3 });
    const created = Date.now();
    const first = await service.getAccount(fresh.key, undefined, '203.0.113.7').then(
      () => undefined,
      (error: RmbgError) => error,
    );
    // Served at once only if the set was reloaded in between; refused, it is told to come back within the bound.
    if (first) {
      expect([first.status, first.retryAfterSeconds]).toEqual([429, KEY_SET_KNOWN_WITHIN_S]);
    }
    await expect
      .poll(
        () =>
          service.getAccount(fresh.key, undefined, '203.0.113.7').then(
            () => 'served',
            () => 'refused',
          ),
        {
          timeout: KEY_SET_KNOWN_WITHIN_S * 1000,
          interval: 100,
        },
      )
      .toBe('served');
    expect(Date.now() - created).toBeLessThan(KEY_SET_KNOWN_WITHIN_S * 1000);

    const other = await store.createAccountWithKey({ plan: 'pro', credits: 2 });
    expect((await service.getAccount(other.key, undefined, '198.51.100.1')).account).toMatchObject({
      data: { attributes: { credits: { total: 2 } } },
    });
  });

  it('a key revoked after it was used: refused at its next request, from any address', async () => {
    expect((await service.getAccount(key, undefined, '203.0.113.7')).account).toBeDefined();
    const [info] = await store.listKeys();
    await store.revokeKey((info as { id: string }).id);
    expect((await rejectionOf(service.getAccount(key, undefined, '198.51.100.1'))).code).toBe('invalid_api_key');
    for (let i = 0; i < 30; i++) await rejectionOf(service.getAccount(badKey(i), undefined, '203.0.113.7'));
    expect((await rejectionOf(service.getAccount(key, undefined, '203.0.113.7'))).status).toBe(429);
  });

  it('600 from addresses rotating through one IPv6 /64 count as one client', async () => {
    for (let i = 0; i < 600; i++) {
      await rejectionOf(service.getAccount(badKey(i), undefined, `2001:db8:1:2::${(i + 1).toString(16)}`));
    }
    expect(lookups).toBe(30);
    expect((await rejectionOf(service.getAccount(badKey(0), undefined, '2001:db8:1:3::1'))).status).toBe(403);
  });

  it('key lookups in progress at once are capped, whatever the number of addresses', async () => {
    let open: () => void = () => {};
    gate = new Promise<void>((resolve) => (open = resolve));
    const calls = Array.from({ length: 20 }, (_, i) =>
      rejectionOf(service.getAccount(badKey(i), undefined, `192.0.2.${i + 1}`)),
    );
    try {
      await expect.poll(() => inProgress).toBe(MAX_CONCURRENT_KEY_LOOKUPS);
    } finally {
      open();
    }
    expect((await Promise.all(calls)).map((error) => error.status)).toEqual(Array(20).fill(403));
    expect([lookups, mostAtOnce]).toEqual([20, MAX_CONCURRENT_KEY_LOOKUPS]);
  });
});

it('the throttled unit: an IPv4 address (also IPv4-mapped), an IPv6 address by its /64', () => {
  expect(
    [
      '1.2.3.4',
      '::ffff:1.2.3.4',
      '2001:db8::1',
      '2001:DB8:0:0:1::',
      '2001:db8:0:0:ffff:1:2:3',
      '::1:2:3:4:5:6:7',
      'fe80::1%eth0',
      '64:ff9b::1.2.3.4',
    ].map(throttledUnit),
  ).toEqual([
    '1.2.3.4',
    '1.2.3.4',
    '2001:db8:0:0::/64',
    '2001:db8:0:0::/64',
    '2001:db8:0:0::/64',
    '0:1:2:3::/64',
    'fe80:0:0:0::/64',
    '64:ff9b:0:0::/64',
  ]);
});
