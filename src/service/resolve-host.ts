// Resolves an image_url's host with c-ares (dns.Resolver), not dns.lookup: lookup runs getaddrinfo on libuv's
// threadpool, which sharp's work shares, so slow DNS answers for many URLs would stall image processing.
// c-ares does not read /etc/hosts, so 'localhost' (RFC 6761: always loopback) is answered here.

import { Resolver } from 'node:dns/promises';
import type { ResolvedAddress } from './address-policy.js';

/** One resolver for the process: c-ares channels are cheap, but there is no need for more. */
let resolver: Resolver | undefined;

function isLocalhost(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** Every A and AAAA address of `host`; rejects with the DNS error when it has neither. */
export async function resolveHost(host: string): Promise<ResolvedAddress[]> {
  if (isLocalhost(host)) return [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }];
  resolver ??= new Resolver();
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
  const addresses: ResolvedAddress[] = [
    ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
    ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
  ];
  if (addresses.length > 0) return addresses;
  throw v4.status === 'rejected' ? v4.reason : new Error(`no addresses for ${host}`);
}
