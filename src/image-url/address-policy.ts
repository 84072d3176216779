// Which IP addresses an image_url may reach: public internet addresses only. Names the class of
// a refused address (loopback, private, cloud metadata, ...) so the error can say what was refused.

import { isIPv4, isIPv6 } from 'node:net';
import { RmbgError } from '../api/errors.js';
import { LogOnlyReason } from '../api/log-only-reason.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

interface Range {
  network: bigint;
  prefix: number;
  label: string;
}

function range(cidr: string, label: string): Range {
  const [address, prefix] = cidr.split('/') as [string, string];
  const network = isIPv4(address) ? ipv4ToBigInt(address) : ipv6ToBigInt(address);
  if (network === undefined) throw new Error(`bad CIDR in address policy: ${cidr}`);
  return { network, prefix: Number(prefix), label };
}

// First match wins, so the specific ranges (metadata endpoints) come before the ranges that hold them.
const IPV4_NON_PUBLIC: readonly Range[] = [
  range('0.0.0.0/8', '"this network" address (0.0.0.0/8)'),
  range('10.0.0.0/8', 'private address (10.0.0.0/8)'),
  range('100.64.0.0/10', 'carrier-grade NAT address (100.64.0.0/10)'),
  range('127.0.0.0/8', 'loopback address (127.0.0.0/8)'),
  range('169.254.169.254/32', 'cloud metadata endpoint (169.254.169.254)'),
  range('169.254.0.0/16', 'link-local address (169.254.0.0/16)'),
  range('172.16.0.0/12', 'private address (172.16.0.0/12)'),
  range('192.0.0.0/24', 'IETF protocol assignment (192.0.0.0/24)'),
  range('192.0.2.0/24', 'documentation address (192.0.2.0/24)'),
  range('192.88.99.0/24', '6to4 relay anycast address (192.88.99.0/24)'),
  range('192.168.0.0/16', 'private address (192.168.0.0/16)'),
  range('198.18.0.0/15', 'benchmarking address (198.18.0.0/15)'),
  range('198.51.100.0/24', 'documentation address (198.51.100.0/24)'),
  range('203.0.113.0/24', 'documentation address (203.0.113.0/24)'),
  range('224.0.0.0/4', 'multicast address (224.0.0.0/4)'),
  range('255.255.255.255/32', 'broadcast address (255.255.255.255)'),
  range('240.0.0.0/4', 'reserved address (240.0.0.0/4)'),
];

const IPV6_NON_PUBLIC: readonly Range[] = [
  range('::/128', 'unspecified address (::)'),
  range('::1/128', 'loopback address (::1)'),
  // Deprecated since RFC 4291 and never a legitimate destination: refused whatever it embeds.
  range('::/96', 'IPv4-compatible IPv6 address (::/96)'),
  range('64:ff9b:1::/48', 'local-use NAT64 address (64:ff9b:1::/48)'),
  range('100::/64', 'discard-only address (100::/64)'),
  range('2001::/32', 'Teredo tunnel address (2001::/32)'),
  range('2001::/23', 'IETF protocol assignment (2001::/23)'),
  range('2001:db8::/32', 'documentation address (2001:db8::/32)'),
  range('3fff::/20', 'documentation address (3fff::/20)'),
  range('fd00:ec2::254/128', 'cloud metadata endpoint (fd00:ec2::254)'),
  range('fc00::/7', 'unique-local address (fc00::/7)'),
  range('fe80::/10', 'link-local address (fe80::/10)'),
  range('fec0::/10', 'site-local address (fec0::/10)'),
  range('ff00::/8', 'multicast address (ff00::/8)'),
];

// IPv6 prefixes that carry an IPv4 address: the verdict is the embedded address's.
const IPV6_EMBEDDING_IPV4: ReadonlyArray<{ range: Range; shift: bigint }> = [
  { range: range('::ffff:0:0/96', 'IPv4-mapped'), shift: 0n },
  { range: range('::ffff:0:0:0/96', 'IPv4-translated'), shift: 0n },
  { range: range('64:ff9b::/96', 'NAT64'), shift: 0n },
  { range: range('2002::/16', '6to4'), shift: 80n },
];

const GLOBAL_UNICAST = range('2000::/3', 'global unicast');

function inRange(value: bigint, bits: number, r: Range): boolean {
  const hostBits = BigInt(bits - r.prefix);
  return value >> hostBits === r.network >> hostBits;
}

function ipv4ToBigInt(address: string): bigint | undefined {
  if (!isIPv4(address)) return undefined;
  return address.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function bigIntToIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

function ipv6ToBigInt(address: string): bigint | undefined {
  // A zone index (fe80::1%eth0) names an interface, not part of the address.
  const bare = address.split('%')[0] ?? '';
  if (!isIPv6(bare)) return undefined;
  let text = bare;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (isIPv4(tail)) {
    const v4 = ipv4ToBigInt(tail) ?? 0n;
    text = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', rest] = text.split('::') as [string, string | undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const restGroups = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups =
    rest === undefined
      ? headGroups
      : [...headGroups, ...Array<string>(8 - headGroups.length - restGroups.length).fill('0'), ...restGroups];
  if (groups.length !== 8) return undefined;
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(parseInt(group, 16)), 0n);
}

/**
 * The class of a non-public address, e.g. "loopback address (127.0.0.0/8)"; undefined for a
 * public internet address. Anything that does not parse as an IP address counts as non-public.
 */
export function nonPublicAddressClass(address: string): string | undefined {
  const v4 = ipv4ToBigInt(address);
  if (v4 !== undefined) return IPV4_NON_PUBLIC.find((r) => inRange(v4, 32, r))?.label;

  const v6 = ipv6ToBigInt(address);
  if (v6 === undefined) return `unparseable address "${address}"`;
  for (const { range: r, shift } of IPV6_EMBEDDING_IPV4) {
    if (!inRange(v6, 128, r)) continue;
    const embedded = bigIntToIpv4((v6 >> shift) & 0xffffffffn);
    const inner = nonPublicAddressClass(embedded);
    return inner === undefined ? undefined : `${r.label} form of ${embedded}, a ${inner}`;
  }
  const listed = IPV6_NON_PUBLIC.find((r) => inRange(v6, 128, r))?.label;
  if (listed !== undefined) return listed;
  return inRange(v6, 128, GLOBAL_UNICAST) ? undefined : 'non-global IPv6 address (outside 2000::/3)';
}

/**
 * What the caller is told of any image_url refused for its address, or whose name resolves to none: the same words
 * for both, so the answer does not tell which names exist inside the server's network. The details go to the log.
 */
export const REFUSED_ADDRESS_MESSAGE =
  'image_url does not resolve to a public address. Only public internet addresses are allowed ' +
  '(names that do not resolve, private networks, loopback, link-local and cloud metadata addresses are refused)';

/** The refusal of a host, with why it was refused for the server's log only. */
export function refusedAddress(logReason: string): RmbgError {
  return new RmbgError('invalid_image_url', REFUSED_ADDRESS_MESSAGE, { cause: new LogOnlyReason(logReason) });
}

/**
 * The addresses a host resolved to, as the only ones the connection may use; ANY non-public one refuses the host
 * (no private address smuggled in beside a public one). `allowPrivate` (local testing) skips the check.
 */
export function checkResolvedAddresses(
  host: string,
  addresses: readonly ResolvedAddress[],
  { allowPrivate = false }: { allowPrivate?: boolean } = {},
): readonly ResolvedAddress[] {
  if (addresses.length === 0) {
    const reason = `image_url host ${host} resolved to no address`;
    throw allowPrivate ? new RmbgError('image_url_unreachable', reason) : refusedAddress(reason);
  }
  if (allowPrivate) return addresses;
  for (const { address } of addresses) {
    const refused = nonPublicAddressClass(address);
    if (refused === undefined) continue;
    const what =
      address === host ? `image_url address ${host}` : `image_url host ${host} resolves to ${address}, which`;
    // One message for every refused address: naming it would map private DNS through the server for the caller.
    throw refusedAddress(`${what} is not public: ${refused}`);
  }
  return addresses;
}
