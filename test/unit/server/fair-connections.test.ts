// The per-address connection cap (src/server/fair-connections.ts): an IPv6 host is counted by its /64, which it
// holds whole; and a client over the cap gets an answer (429 with Retry-After, Connection: close), not a reset.

import { EventEmitter } from 'node:events';
import { request } from 'node:http';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type OverCap, shareConnections } from '../../../src/server/fair-connections.js';
import { startServer, type RunningServer } from '../../../src/server/start-server.js';
import { trustedProxies } from '../../../src/server/trusted-proxies.js';
import type { Service } from '../../../src/service/index.js';
import { TEST_APP_LIMITS } from '../../helpers/sharp-test-engine.js';

describe('the connections counted per address', () => {
  /** Node's server as shareConnections sees it, and a connection arriving on it from `address`. */
  function fakeServer(maxConnectionsPerAddress: number) {
    const server = Object.assign(new EventEmitter(), { maxConnections: 100, _connections: 0 }) as unknown as Server;
    const overCap: OverCap = new WeakSet();
    shareConnections(server, {
      maxConnectionsPerAddress,
      headersTimeoutMs: 5000,
      proxies: trustedProxies([]),
      overCap,
    });
    const arrive = (address: string): 'held' | 'over the cap' | 'closed on arrival' => {
      const socket = Object.assign(new EventEmitter(), { remoteAddress: address, bytesRead: 0, destroyed: false });
      const destroy = () => {
        socket.destroyed = true;
        socket.emit('close');
      };
      server.emit('connection', Object.assign(socket, { destroy }) as unknown as Socket);
      if (socket.destroyed) return 'closed on arrival';
      return overCap.has(socket as unknown as Socket) ? 'over the cap' : 'held';
    };
    return { arrive };
  }

  it('IPv6 by its /64: addresses of one /64 share the cap, another /64 has its own; IPv4 by the address', () => {
    const { arrive } = fakeServer(2);
    const oneNetwork = [
      '2001:db8:0:1::1',
      '2001:db8:0:1::2',
      '2001:db8:0:1:ffff::3',
      '2001:DB8:0:1:0:0:0:4',
      '2001:db8:0:1::5',
    ];
    expect(oneNetwork.map(arrive)).toEqual(['held', 'held', 'over the cap', 'over the cap', 'closed on arrival']);
    expect(['2001:db8:0:2::1', '2001:db8:0:2::1'].map(arrive)).toEqual(['held', 'held']);
    expect(['10.0.0.1', '10.0.0.1', '10.0.0.2', '::ffff:10.0.0.2'].map(arrive)).toEqual([
      'held',
      'held',
      'held',
      'held',
    ]);
    expect(arrive('10.0.0.2')).toBe('over the cap');
  });
});

describe('a client over the cap', () => {
  let server: RunningServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  interface Answer {
    status: number | string;
    headers: Record<string, string | string[] | undefined>;
    body: string;
  }

  /** GET /v1.0/account on a connection of its own: the answer, or the socket error's code. */
  function account(url: URL): Promise<Answer> {
    return new Promise((resolve) => {
      const call = request({ host: url.hostname, port: Number(url.port), path: '/v1.0/account', agent: false });
      call.setHeader('x-api-key', 'k');
      call.on('response', (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      });
      call.on('error', (error: NodeJS.ErrnoException) =>
        resolve({ status: error.code ?? error.message, headers: {}, body: '' }),
      );
      call.end();
    });
  }

  it('with --max-connections-per-address 4, 8 clients at once: 4 served, 4 answered 429 with Retry-After and Connection: close', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const service = {
      handleRemoveRequest: async () => {
        throw new Error('not called');
      },
      getAccount: async () => {
        await held;
        return { account: { data: { attributes: {} } }, rateLimit: { limit: 60, remaining: 59, resetSeconds: 60 } };
      },
    } as unknown as Pick<Service, 'handleRemoveRequest' | 'getAccount'>;
    server = await startServer({
      host: '127.0.0.1',
      port: 0,
      service,
      ...TEST_APP_LIMITS,
      maxConnectionsPerAddress: 4,
    });
    const url = new URL(server.url);

    // The 4 served are held by the service until the 4 others have their answer (or their reset).
    let settled = 0;
    let markFourSettled: () => void = () => undefined;
    const fourSettled = new Promise<void>((resolve) => (markFourSettled = resolve));
    const clients = Array.from({ length: 8 }, () =>
      account(url).then((answer) => {
        settled += 1;
        if (settled === 4) markFourSettled();
        return answer;
      }),
    );
    await fourSettled;
    release();
    const answers = await Promise.all(clients);

    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 200, 200, 200, 429, 429, 429, 429]);
    for (const refused of answers.filter((answer) => answer.status === 429)) {
      expect(refused.headers['retry-after']).toBe('2');
      expect(refused.headers.connection).toBe('close');
      expect(JSON.parse(refused.body)).toMatchObject({ errors: [{ code: 'rate_limited' }] });
    }
  });
});
