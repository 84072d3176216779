// The throttle of failed keys protects the store, not only the answers: a flood of bad keys from one address
// (or one IPv6 /64) costs the store about the throttle's limit of key lookups (and one one-row read of the count of
// key changes per refused key, shared by the keys of the moment), a valid key is still served from that address
// (also one it never used, and one created a moment ago: the set of valid keys knows it), and key lookups of
// unknown keys in progress at once are capped whatever the addresses, while known keys pass them.
// On the real SQLite store, counted at its boundary.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { throttledUnit } from '../../../src/service/auth-throttle.js';
import { createService, type Service } from '../../../src/service/index.js';
import { MAX_CONCURRENT_KEY_LOOKUPS } from '../../../src/service/key-lookups.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { rejectionOf } from '../../helpers/rejection.js';
import { testEngine, TEST_SERVICE_LIMITS } from '../../helpers/sharp-test-engine.js';

let dir: string;
let store: Store;
let service: Service;
let key: string;
/** Key lookups that reached the store, and the most in progress at once. */
let lookups: number;
/** Every read of the key table: lookups, and the set of valid keys' loads of keys. */
let keyTableReads: number;
/** Reads of the one-row count of key changes. */
let changeChecks: number;
let inProgress: number;
let mostAtOnce: number;
/** While set, each lookup of a bad key waits for it before going to the store (a database slow to answer them). */
let gate: Promise<void> | undefined;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmbg-auth-flood-'));
  store = await openStore(dir);
  ({ key } = await store.createAccountWithKey({ plan: 'pro', credits: 5 }));
  lookups = 0;
  keyTableReads = 0;
  changeChecks = 0;
  inProgress = 0;
  mostAtOnce = 0;
  gate = undefined;
  const counted: Store = {
    ...store,
    keyChangeCount: () => {
      changeChecks += 1;
      return store.keyChangeCount();
    },
    keysChangedSince: (since) => {
      keyTableReads += 1;
      return store.keysChangedSince(since);
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
        if (apiKey.startsWith('bad-key')) await gate;
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
    // One after another, each refused key checks the count of key changes once: one row, never the keys.
    expect(changeChecks).toBeLessThanOrEqual(570 + 1);
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

  it('600 at once from a throttled address: the refused keys share a few reads of the count of key changes', async () => {
    for (let i = 0; i < 30; i++) await rejectionOf(service.getAccount(badKey(i), undefined, '203.0.113.7'));
    const [reads, checks] = [keyTableReads, changeChecks];
    const errors = await Promise.all(
      Array.from({ length: 600 }, (_, i) => rejectionOf(service.getAccount(badKey(i), undefined, '203.0.113.7'))),
    );
    expect(errors.every((error) => error.status === 429)).toBe(true);
    expect([keyTableReads - reads, changeChecks - checks]).toEqual([0, 2]);
  });

  it('a key created after the start: served on its first request, from a throttled address too', async () => {
    for (let i = 0; i < 30; i++) await rejectionOf(service.getAccount(badKey(i), undefined, '203.0.113.7'));
    const fresh = await store.createAccountWithKey({ plan: 'pro', credits: 3 });
    expect((await service.getAccount(fresh.key, undefined, '203.0.113.7')).account).toMatchObject({
      data: { attributes: { credits: { total: 3 } } },
    });
    expect((await rejectionOf(service.getAccount(badKey(30), undefined, '203.0.113.7'))).status).toBe(429);

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

  it('key lookups in progress at once are capped, whatever the number of addresses; known keys pass them', async () => {
    // The key is known to this server (loaded at start); the bad keys are not.
    let open: () => void = () => {};
    gate = new Promise<void>((resolve) => (open = resolve));
    const calls = Array.from({ length: 20 }, (_, i) =>
      rejectionOf(service.getAccount(badKey(i), undefined, `192.0.2.${i + 1}`)),
    );
    try {
      await expect.poll(() => inProgress).toBe(MAX_CONCURRENT_KEY_LOOKUPS);
      // The queue is full and 14 more wait behind it: a known key is looked up and served meanwhile.
      expect((await service.getAccount(key, undefined, '192.0.2.100')).account).toMatchObject({
        data: { attributes: { credits: { total: 5 } } },
      });
      expect(inProgress).toBe(MAX_CONCURRENT_KEY_LOOKUPS);
    } finally {
      open();
    }
    expect((await Promise.all(calls)).map((error) => error.status)).toEqual(Array(20).fill(403));
    expect([lookups, mostAtOnce]).toEqual([21, MAX_CONCURRENT_KEY_LOOKUPS + 1]);
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
