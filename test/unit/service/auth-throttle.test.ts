// The throttle of failed keys on its own: a refusal once an address reaches its failures of the minute, and
// a map of addresses that stays bounded however many addresses fail within one minute, forgetting the oldest.

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
    // The newest are still refused; the oldest were forgotten and count afresh.
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
});
