// A safety net for tests that hand non-loopback addresses to networking code (to prove they are refused):
// while installed, any socket connect to an address outside 127.0.0.0/8 and ::1 fails before a packet leaves.

import { lookup as dnsLookup } from 'node:dns';
import net, { type LookupFunction } from 'node:net';

type Connect = (this: net.Socket, ...args: unknown[]) => net.Socket;

function isLoopback(address: string): boolean {
  return net.isIPv4(address) ? address.startsWith('127.') : address === '::1' || /^::ffff:127\./i.test(address);
}

function refusal(address: string): Error {
  return Object.assign(new Error(`loopback-only test network: refused a connection to ${address}`), {
    code: 'ETESTNONLOOPBACK',
  });
}

/** Wraps a lookup so every address it yields is checked before the socket may connect to it. */
function guardedLookup(inner: LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    inner(hostname, options, ((error: NodeJS.ErrnoException | null, address: unknown, family?: number) => {
      if (error) return callback(error, '', 0);
      const list = Array.isArray(address)
        ? (address as Array<{ address: string }>).map((a) => a.address)
        : [address as string];
      const outside = list.find((a) => !isLoopback(a));
      if (outside !== undefined) return callback(refusal(outside), '', 0);
      return (callback as (...a: unknown[]) => void)(null, address, family);
    }) as Parameters<LookupFunction>[2]);
  };
}

function literalLookup(address: string): LookupFunction {
  const family = net.isIP(address);
  return (_hostname, options, callback) => {
    if (options.all) (callback as (...a: unknown[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

/** Installs the guard for this test process; returns a function that removes it. */
export function installLoopbackOnlyNetwork(): () => void {
  const original = net.Socket.prototype.connect as unknown as Connect;
  const guarded: Connect = function (this: net.Socket, ...args) {
    // net.connect passes its normalized [options, callback] array; https/tls pass (options, callback).
    const holder = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
    const first = holder[0];
    if (typeof first !== 'object' || first === null || (first as { path?: unknown }).path) {
      return original.apply(this, args); // a Unix socket (or a form tests do not use)
    }
    const options = first as { host?: string; lookup?: LookupFunction };
    const host = options.host ?? 'localhost';
    // A literal IP skips lookup; a stand-in name routes it through the lookup below, so a refusal
    // surfaces as an ordinary asynchronous connect error.
    const literal = net.isIP(host) !== 0;
    if (literal && isLoopback(host)) return original.apply(this, args);
    holder[0] = {
      ...options,
      host: literal ? 'literal-address.invalid' : host,
      lookup: guardedLookup(
        literal ? literalLookup(host) : (options.lookup ?? (dnsLookup as unknown as LookupFunction)),
      ),
    };
    return original.apply(this, args);
  };
  net.Socket.prototype.connect = guarded as unknown as typeof net.Socket.prototype.connect;
  return () => {
    net.Socket.prototype.connect = original as unknown as typeof net.Socket.prototype.connect;
  };
}
