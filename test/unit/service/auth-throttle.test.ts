// The throttle of failed keys on its own: a refusal once an address reaches its failures of the minute, and
// a map of addresses that stays bounded however many addresses fail within one minute, yet cannot be emptied by
// them: it forgets windows that are over, then the least recently used of those with the fewest failures.

import { describe, expect, it } from 'vitest';
import { AuthThrottle, MAX_THROTTLED_ADDRESSES } from '../../../src/service/auth-throttle.js';

const quiet = () => undefined;

describe('AuthThrottle', () => {
  it('refuses an address that reached its failures until its minute ends, with Retry-After', () => {
    const throttle = new AuthThrottle(2, quiet);
    throttle.fail('10.0.0.1', 0);
    expect(throttle.refusal('10.0.0.1', 1000)).toBeUndefined();
    throttle.fail('10.0.0.1', 1000);
    expect(throttle.refusal('10.0.0.1', 30_000)).toMatchObject({ code: 'rate_limited', retryAfterSeconds: 30 });
    expect(throttle.refusal('10.0.0.2', 30_000)).toBeUndefined();
    expect(throttle.refusal('10.0.0.1', 60_000)).toBeUndefined();
  });

  it('keeps at most its bound of addresses when more fail within one minute than it holds', () => {
    const throttle = new AuthThrottle(1, quiet);
    const addresses = MAX_THROTTLED_ADDRESSES * 3;
    for (let i = 0; i < addresses; i += 1) {
      throttle.fail(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, i);
      expect(throttle.size).toBeLessThanOrEqual(MAX_THROTTLED_ADDRESSES);
    }
    expect(throttle.size).toBe(MAX_THROTTLED_ADDRESSES);
    // The newest are still refused; the least recently used were forgotten and count afresh.
    const last = addresses - 1;
    expect(throttle.refusal(`10.${(last >> 16) & 255}.${(last >> 8) & 255}.${last & 255}`, addresses)).toMatchObject({
      code: 'rate_limited',
    });
    expect(throttle.refusal('10.0.0.0', addresses)).toBeUndefined();
  });

  it('forgets ended windows as new addresses come, so the map shrinks back without a sweep', () => {
    const throttle = new AuthThrottle(1, quiet, 100);
    for (let i = 0; i < 100; i += 1) throttle.fail(`192.0.2.${i}`, 0);
    expect(throttle.size).toBe(100);
    // A minute later, each new address drops up to two ended windows.
    for (let i = 0; i < 40; i += 1) throttle.fail(`198.51.100.${i}`, 60_000 + i);
    expect(throttle.size).toBe(100 - 80 + 40);
    expect(throttle.refusal('198.51.100.39', 60_100)).toMatchObject({ code: 'rate_limited' });
    // An address of the first minute that was not dropped yet is no longer refused either.
    expect(throttle.refusal('192.0.2.99', 60_100)).toBeUndefined();
  });

  it('cannot be emptied: 20 failures, one each from 10,001 other addresses, 20 more: refused at the limit', () => {
    const throttle = new AuthThrottle(30, quiet);
    for (let t = 0; t < 20; t += 1) throttle.fail('203.0.113.7', t);
    for (let i = 1; i <= MAX_THROTTLED_ADDRESSES + 1; i += 1)
      throttle.fail(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 20 + i);
    expect(throttle.size).toBe(MAX_THROTTLED_ADDRESSES);
    const refused: boolean[] = [];
    for (let t = 20_000; t < 20_020; t += 1) {
      refused.push(throttle.refusal('203.0.113.7', t) !== undefined);
      throttle.fail('203.0.113.7', t);
    }
    expect(refused).toEqual([...Array(10).fill(false), ...Array(10).fill(true)]);
  });

  it('among clients at the limit, forgets the one that failed least recently, never one still failing', () => {
    const throttle = new AuthThrottle(3, quiet, 100);
    const atLimit = (address: string, at: number) => {
      for (let i = 0; i < 3; i += 1) throttle.fail(address, at);
    };
    atLimit('203.0.113.7', 0);
    for (let i = 0; i < 99; i += 1) atLimit(`192.0.2.${i}`, 1);
    // The first keeps failing (its refused keys count): it is now the most recently used.
    throttle.fail('203.0.113.7', 2);
    // Each new client, once it reaches the limit, pushed out the least recently used at the limit: 192.0.2.0, .1 …
    for (let i = 0; i < 5; i += 1) atLimit(`198.51.100.${i}`, 3);
    expect(throttle.size).toBe(100);
    expect(throttle.refusal('203.0.113.7', 4)).toMatchObject({ code: 'rate_limited' });
    expect(throttle.refusal('192.0.2.5', 4)).toMatchObject({ code: 'rate_limited' });
    expect(throttle.refusal('192.0.2.4', 4)).toBeUndefined();
    expect(throttle.refusal('198.51.100.4', 4)).toMatchObject({ code: 'rate_limited' });
  });

  it('rotating through the /64s of a /48 cannot push out a client at the limit', () => {
    const throttle = new AuthThrottle(30, quiet, 1_000);
    for (let i = 0; i < 30; i += 1) throttle.fail('2001:db8:5:1::1', i);
    for (let i = 0; i < 65_536; i += 1) throttle.fail(`2001:db8:6:${i.toString(16)}::1`, 100 + i / 10);
    expect(throttle.refusal('2001:db8:5:1::ffff', 7_000)).toMatchObject({ code: 'rate_limited' });
  });
});
