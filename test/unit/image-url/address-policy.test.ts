// The public-address policy behind image_url, on address strings alone (nothing here opens a socket).

import { describe, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import {
  checkResolvedAddresses,
  nonPublicAddressClass,
  REFUSED_ADDRESS_MESSAGE,
} from '../../../src/image-url/address-policy.js';

describe('nonPublicAddressClass', () => {
  it.each([
    ['0.0.0.0', '0.0.0.0/8'],
    ['0.1.2.3', '0.0.0.0/8'],
    ['10.0.0.1', 'private address (10.0.0.0/8)'],
    ['10.255.255.255', 'private address (10.0.0.0/8)'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.254', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback address (127.0.0.0/8)'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'cloud metadata endpoint (169.254.169.254)'],
    ['169.254.1.1', 'link-local address (169.254.0.0/16)'],
    ['172.16.0.1', 'private address (172.16.0.0/12)'],
    ['172.31.255.255', 'private address (172.16.0.0/12)'],
    ['192.0.0.8', 'IETF protocol assignment'],
    ['192.0.2.10', 'documentation address (192.0.2.0/24)'],
    ['192.168.1.1', 'private address (192.168.0.0/16)'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'documentation address (198.51.100.0/24)'],
    ['203.0.113.9', 'documentation address (203.0.113.0/24)'],
    ['224.0.0.251', 'multicast address (224.0.0.0/4)'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved address (240.0.0.0/4)'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified address (::)'],
    ['::1', 'loopback address (::1)'],
    ['0:0:0:0:0:0:0:1', 'loopback address (::1)'],
    ['fc00::1', 'unique-local address (fc00::/7)'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'cloud metadata endpoint (fd00:ec2::254)'],
    ['fe80::1', 'link-local address (fe80::/10)'],
    ['fe80::1%eth0', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['ff02::1', 'multicast address (ff00::/8)'],
    ['2001:db8::1', 'documentation address (2001:db8::/32)'],
    ['::ffff:127.0.0.1', 'IPv4-mapped form of 127.0.0.1, a loopback address'],
    ['::ffff:7f00:1', 'IPv4-mapped form of 127.0.0.1'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped form of 169.254.169.254, a cloud metadata endpoint'],
    ['::ffff:0:10.0.0.1', 'IPv4-translated form of 10.0.0.1'],
    ['64:ff9b::7f00:1', 'NAT64 form of 127.0.0.1'],
    ['64:ff9b::192.168.0.1', 'NAT64 form of 192.168.0.1, a private address'],
    ['64:ff9b:1::1', 'local-use NAT64'],
    ['2002:7f00:1::1', '6to4 form of 127.0.0.1'],
    ['2002:0a00:0001::', '6to4 form of 10.0.0.1'],
    ['::127.0.0.1', 'IPv4-compatible'],
    ['::8.8.8.8', 'IPv4-compatible'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['2001:2::1', 'IETF protocol assignment (2001::/23)'],
    ['fec0::1', 'site-local'],
    ['100::1', 'discard-only'],
    ['3fff::1', 'documentation address (3fff::/20)'],
    ['4000::1', 'non-global IPv6 address'],
    ['not-an-address', 'unparseable'],
    ['1.2.3', 'unparseable'],
  ])('%s is refused as %s', (address, label) => {
    expect(nonPublicAddressClass(address)).toContain(label);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '100.63.255.255', // just below carrier-grade NAT
    '100.128.0.0', // just above it
    '172.15.255.255',
    '172.32.0.0',
    '169.253.255.255',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:82b::200e',
    '2001:4860:4860::8888', // outside 2001::/23, a real public resolver
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public', (address) => {
    expect(nonPublicAddressClass(address)).toBeUndefined();
  });
});

describe('checkResolvedAddresses', () => {
  const refusal = (run: () => unknown): RmbgError => {
    try {
      run();
    } catch (error) {
      if (error instanceof RmbgError) return error;
      throw error;
    }
    throw new Error('expected a refusal');
  };

  it('returns the addresses when every one is public: they are the only ones connected to', () => {
    const addresses = [
      { address: '2606:4700:4700::1111', family: 6 as const },
      { address: '1.1.1.1', family: 4 as const },
    ];
    expect(checkResolvedAddresses('images.example', addresses)).toEqual(addresses);
  });

  it('refuses a host when ANY of its addresses is non-public, naming that address and its class to the log only', () => {
    for (const addresses of [
      [
        { address: '1.1.1.1', family: 4 as const },
        { address: '10.1.2.3', family: 4 as const },
      ],
      [
        { address: '10.1.2.3', family: 4 as const },
        { address: '1.1.1.1', family: 4 as const },
      ],
    ]) {
      const error = refusal(() => checkResolvedAddresses('images.example', addresses));
      expect(error.code).toBe('invalid_image_url');
      expect(error.status).toBe(400);
      // The caller is told one generic message; what the host resolves to, and why it is refused, is for the log.
      expect(error.message).toBe(REFUSED_ADDRESS_MESSAGE);
      expect(error.message).not.toContain('10.1.2.3');
      expect((error.cause as Error).message).toBe(
        'image_url host images.example resolves to 10.1.2.3, which is not public: private address (10.0.0.0/8)',
      );
    }
  });

  it('names a literal address directly', () => {
    const error = refusal(() => checkResolvedAddresses('169.254.169.254', [{ address: '169.254.169.254', family: 4 }]));
    expect(error.message).toBe(REFUSED_ADDRESS_MESSAGE);
    expect((error.cause as Error).message).toMatch(
      /^image_url address 169\.254\.169\.254 is not public: cloud metadata endpoint/,
    );
  });

  it('with allowPrivate, keeps private addresses instead of refusing them', () => {
    const addresses = [
      { address: '::1', family: 6 as const },
      { address: '127.0.0.1', family: 4 as const },
    ];
    expect(checkResolvedAddresses('localhost', addresses, { allowPrivate: true })).toEqual(addresses);
  });

  it('refuses a host with no address like a private one, and calls it unreachable with allowPrivate', () => {
    expect(refusal(() => checkResolvedAddresses('images.example', [], { allowPrivate: true })).code).toBe(
      'image_url_unreachable',
    );
    const error = refusal(() => checkResolvedAddresses('images.example', []));
    expect([error.code, error.message]).toEqual(['invalid_image_url', REFUSED_ADDRESS_MESSAGE]);
    expect((error.cause as Error).message).toContain('resolved to no address');
  });
});
