// Keeps one address from taking every connection of the server (issue #38), and one connection from queueing
// without end:
// - a TCP peer (IPv6: its /64, which one host holds whole) may hold at most --max-connections-per-address sockets.
//   As many again are let in only to answer their first request 429 with Connection: close (a client at once needs
//   an answer, not a reset); past that they are closed on arrival. A trusted proxy (--trust-proxy) is exempt, since
//   its connections carry everyone behind it: there the cap applies per request, to the client address of
//   X-Forwarded-For (requests in progress at once, past it 429);
// - a connection may have at most --max-pipelined-requests requests in progress at once; past it 429 and the
//   connection is closed after that answer;
// - once the server holds BUSY_SHARE of --max-connections, a connection still waiting for a request's headers
//   (half-open, or idle between kept-alive requests) is cut after BUSY_HEADERS_TIMEOUT_MS instead of
//   --headers-timeout, so that slow or silent connections make room for those that send requests. A connection
//   over the cap has that shorter time always.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RmbgError } from '../api/errors.js';
import { throttledUnit } from '../service/auth-throttle.js';
import { whenAnswerGone } from './answer-gone.js';
import { writeClientError } from './client-error.js';
import type { TrustedProxies } from './trusted-proxies.js';

/** Share of --max-connections from which connections waiting for headers are cut sooner. */
export const BUSY_SHARE = 0.75;
/** Time to send complete request headers (from connecting, or from the previous answer) while the server is busy. */
export const BUSY_HEADERS_TIMEOUT_MS = 2000;
/** How often the busy server looks for connections past that time (as often as Node checks its own timeouts). */
const CHECK_INTERVAL_MS = 1000;
/** Retry-After of a 429 for too many connections or requests of one address: about one request's time. */
const RETRY_AFTER_SECONDS = 2;

interface Waiting {
  /** When the connection began waiting for a request's headers. */
  since: number;
  /** Bytes read from it by then: more now means a request has begun (half-open), none means idle. */
  readBefore: number;
}

/** Counts per key (an address, a socket), an entry dropped at zero. */
class Counts<K> {
  readonly #counts = new Map<K, number>();
  of(key: K): number {
    return this.#counts.get(key) ?? 0;
  }
  add(key: K): void {
    this.#counts.set(key, this.of(key) + 1);
  }
  remove(key: K): void {
    const left = this.of(key) - 1;
    if (left <= 0) this.#counts.delete(key);
    else this.#counts.set(key, left);
  }
}

/** The connections let in over their address's cap, to be answered 429 (refuseOverCap). */
export type OverCap = WeakSet<Socket>;

/**
 * The TCP half: per-peer cap and the busy server's shorter headers timeout, on Node's server. The connections let
 * in over the cap are added to `overCap`, whose requests the app answers 429 (refuseOverCap).
 */
export function shareConnections(
  server: Server,
  options: { maxConnectionsPerAddress: number; headersTimeoutMs: number; proxies: TrustedProxies; overCap: OverCap },
): void {
  const { overCap } = options;
  const perPeer = new Counts<string>();
  const overCapPerPeer = new Counts<string>();
  const waiting = new Map<Socket, Waiting>();
  const busyTimeoutMs = Math.min(BUSY_HEADERS_TIMEOUT_MS, options.headersTimeoutMs);
  const startWaiting = (socket: Socket) =>
    waiting.set(socket, { since: performance.now(), readBefore: socket.bytesRead });

  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress ?? '';
    if (!options.proxies.trusts(peer)) {
      const unit = throttledUnit(peer);
      const held = perPeer.of(unit) < options.maxConnectionsPerAddress ? perPeer : overCapPerPeer;
      if (held.of(unit) >= options.maxConnectionsPerAddress) {
        socket.destroy();
        return;
      }
      if (held === overCapPerPeer) overCap.add(socket);
      held.add(unit);
      socket.once('close', () => held.remove(unit));
    }
    startWaiting(socket);
    socket.once('close', () => waiting.delete(socket));
  });
  // 'checkContinue' stands for 'request' when the client sends Expect: 100-continue.
  // Requests in progress per socket: pipelined ones overlap, and the socket waits again only when none is left.
  const requests = new Counts<Socket>();
  const requestBegan = (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    waiting.delete(socket);
    requests.add(socket);
    whenAnswerGone(response, () => {
      requests.remove(socket);
      if (requests.of(socket) === 0 && !socket.destroyed) startWaiting(socket);
    });
  };
  server.on('request', requestBegan);
  server.on('checkContinue', requestBegan);

  const cutOverdue = () => {
    if (waiting.size === 0) return;
    const busy = openConnections(server) >= BUSY_SHARE * server.maxConnections;
    const now = performance.now();
    for (const [socket, state] of waiting) {
      if ((!busy && !overCap.has(socket)) || now - state.since < busyTimeoutMs) continue;
      // One turn of the loop later, and only if still waiting: headers read meanwhile (after the loop was held)
      // become a request first, since libuv reads sockets before setImmediate callbacks run.
      setImmediate(() => {
        if (waiting.get(socket) !== state || socket.destroyed) return;
        if (socket.bytesRead > state.readBefore) {
          const timeout = Object.assign(new Error('headers not received in time'), {
            code: 'ERR_HTTP_REQUEST_TIMEOUT',
          });
          writeClientError(timeout, socket);
        } else socket.destroy();
      });
    }
  };
  let timer: NodeJS.Timeout | undefined;
  server.on('listening', () => {
    timer = setInterval(cutOverdue, CHECK_INTERVAL_MS);
    timer.unref();
  });
  server.on('close', () => clearInterval(timer));
}

function openConnections(server: Server): number {
  // _connections: net.Server's own count, the one maxConnections is checked against.
  return (server as Server & { _connections: number })._connections;
}

/**
 * The request half: behind a trusted proxy, requests in progress at once per client address (the peer is the
 * proxy, so the TCP cap cannot tell clients apart). Past the cap: 429 rate_limited. A fastify onRequest hook.
 */
export function shareRequests(maxPerAddress: number, proxies: TrustedProxies) {
  const inProgress = new Counts<string>();
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (!proxies.trusts(request.socket.remoteAddress)) return;
    const client = throttledUnit(request.ip);
    if (inProgress.of(client) >= maxPerAddress) {
      throw new RmbgError(
        'rate_limited',
        `too many requests in progress from this address (at most ${maxPerAddress} at once); retry in ${RETRY_AFTER_SECONDS} s`,
        { retryAfterSeconds: RETRY_AFTER_SECONDS },
      );
    }
    inProgress.add(client);
    whenAnswerGone(reply.raw, () => inProgress.remove(client));
  };
}

/**
 * The connection's own limits, a fastify onRequest hook: a request on a connection over its address's cap, or past
 * the connection's requests in progress (pipelined), is answered 429 rate_limited and the connection closed after.
 */
export function refuseOverCap(options: { overCap: OverCap; maxConnectionsPerAddress: number; maxPipelined: number }) {
  const inProgress = new Counts<Socket>();
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const socket = request.raw.socket;
    const earlier = inProgress.of(socket);
    inProgress.add(socket);
    whenAnswerGone(reply.raw, () => inProgress.remove(socket));
    const refusal = options.overCap.has(socket)
      ? `too many connections from this address (at most ${options.maxConnectionsPerAddress} at once)`
      : earlier >= options.maxPipelined
        ? `too many requests in progress on one connection (at most ${options.maxPipelined}, pipelined)`
        : undefined;
    if (refusal === undefined) return;
    reply.header('Connection', 'close');
    throw new RmbgError('rate_limited', `${refusal}; retry in ${RETRY_AFTER_SECONDS} s`, {
      retryAfterSeconds: RETRY_AFTER_SECONDS,
    });
  };
}
