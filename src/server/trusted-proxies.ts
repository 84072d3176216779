// The proxies whose X-Forwarded-For the server believes (`--trust-proxy`): addresses and CIDR blocks. A
// request's client address is read from that header only when the socket's peer is one of them, and then
// only as far back as the chain of trusted proxies goes; from anyone else the header is ignored.

import { BlockList, isIP } from 'node:net';
import { RmbgError } from '../api/errors.js';

export interface TrustedProxies {
  /** The entries as given (empty: no proxy is trusted). */
  readonly entries: readonly string[];
  /** Whether `address` (a socket peer or a hop of X-Forwarded-For) is a trusted proxy. */
  trusts(address: string | undefined): boolean;
}

/** `::ffff:10.0.0.1` (an IPv4 peer of a dual-stack socket) is 10.0.0.1. */
function unmapped(address: string): string {
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  return v4 ?? address;
}

/** Splits `--trust-proxy 10.0.0.1,10.1.0.0/16` (commas or spaces) into its entries. */
export function trustProxyEntries(value: string): string[] {
  return value.split(/[\s,]+/).filter((entry) => entry !== '');
}

/** Throws usage_error naming the first entry that is neither an IP address nor an address/prefix block. */
export function trustedProxies(entries: readonly string[]): TrustedProxies {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const plain = unmapped(address);
    const family = isIP(plain);
    const bits = family === 4 ? 32 : 128;
    const length = prefix === undefined ? bits : /^\d{1,3}$/.test(prefix) ? Number(prefix) : Number.NaN;
    if (family === 0 || extra !== undefined || !(length >= 0 && length <= bits)) {
      throw new RmbgError(
        'usage_error',
        `--trust-proxy: '${entry.slice(0, 60)}' is not an IP address or a CIDR block (e.g. 10.0.0.5, 10.0.0.0/8, fd00::/8)`,
      );
    }
    list.addSubnet(plain, length, family === 4 ? 'ipv4' : 'ipv6');
  }
  return {
    entries: [...entries],
    trusts(address) {
      if (address === undefined || entries.length === 0) return false;
      const plain = unmapped(address);
      const family = isIP(plain);
      return family !== 0 && list.check(plain, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}
