// A TCP proxy of the test's own, on 127.0.0.1, relaying to one upstream (a real PostgreSQL). freeze() stops
// relaying the connections open at that moment and keeps them open: what a failover that blackholes the old
// primary looks like to a client (its bytes are taken, no answer comes, no reset). New connections pass, unless
// hang() was called: then new connections are accepted and never relayed either (a database host gone silent),
// until resume().

import net, { type AddressInfo, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Connections relayed so far (open or not). */
  readonly accepted: number;
  /** Freezes every connection open now; returns how many. */
  freeze(): number;
  /** From now on, new connections are accepted and held open without an upstream: nothing is relayed. */
  hang(): void;
  /** New connections pass again (the frozen ones stay frozen). */
  resume(): void;
  close(): Promise<void>;
}

interface Relay {
  client: Socket;
  upstream: Socket;
  frozen: boolean;
}

export async function startTcpProxy(upstreamHost: string, upstreamPort: number): Promise<TcpProxy> {
  const relays = new Set<Relay>();
  let accepted = 0;
  let hanging = false;
  const held = new Set<Socket>();
  const server = net.createServer((client) => {
    accepted += 1;
    if (hanging) {
      // Taken and never answered: the client's connect timeout is all that ends it.
      held.add(client);
      client.on('error', () => {});
      client.on('close', () => held.delete(client));
      return;
    }
    const upstream = net.connect(upstreamPort, upstreamHost);
    const relay: Relay = { client, upstream, frozen: false };
    relays.add(relay);
    const pass = (from: Socket, to: Socket) => {
      from.on('data', (chunk: Buffer) => {
        if (!relay.frozen) to.write(chunk);
      });
      // A frozen connection stays open whatever its upstream does (PostgreSQL ending an idle session).
      from.on('end', () => {
        if (!relay.frozen) to.end();
      });
    };
    pass(client, upstream);
    pass(upstream, client);
    // The upstream gone: the client is told, unless frozen (it stays open, and close() ends it).
    const forget = () => {
      if (relay.frozen) return;
      relays.delete(relay);
      client.destroy();
    };
    client.on('error', () => {});
    upstream.on('error', () => {});
    client.on('close', () => {
      // The client gave the connection up: nothing is left to keep open.
      relays.delete(relay);
      upstream.destroy();
    });
    upstream.on('close', forget);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get accepted() {
      return accepted;
    },
    freeze() {
      for (const relay of relays) relay.frozen = true;
      return relays.size;
    },
    hang() {
      hanging = true;
    },
    resume() {
      hanging = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of held) socket.destroy();
        for (const relay of relays) {
          relay.client.destroy();
          relay.upstream.destroy();
        }
        server.close(() => resolve());
      }),
  };
}
