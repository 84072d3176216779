// Resolves an image_url's host with c-ares (dns.resolve4 / resolve6), not dns.lookup: lookup runs getaddrinfo on libuv's
// threadpool, which sharp's work shares, so slow DNS answers for many URLs would stall image processing.
// c-ares does not read /etc/hosts, so 'localhost' (RFC 6761: always loopback) is answered here.

import dns from 'node:dns/promises';
import type { ResolvedAddress } from './address-policy.js';

function isLocalhost(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** What resolveHost asks: the process's c-ares channel by default (a test passes a dns.Resolver of its own). */
export type CaresResolver = Pick<typeof dns, 'resolve4' | 'resolve6'>;

/** Every A and AAAA address of `host`; rejects with the DNS error when it has neither. */
export async function resolveHost(host: string, resolver: CaresResolver = dns): Promise<ResolvedAddress[]> {
  if (isLocalhost(host))
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
  const addresses: ResolvedAddress[] = [
    ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
    ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
  ];
  if (addresses.length > 0) return addresses;
  throw v4.status === 'rejected' ? v4.reason : new Error(`no addresses for ${host}`);
}
