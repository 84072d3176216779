// Listens with the app on a host and port and gives back the real URL (port 0 picks a free port) and
// a close() that stops accepting and waits for the requests in flight.

import type { AddressInfo } from 'node:net';
import { buildApp, type AppOptions } from './build-app.js';

export interface ServerOptions extends AppOptions {
  host: string;
  port: number;
}

export interface RunningServer {
  url: string;
  port: number;
  /** Stops accepting connections, answers 503 on kept-alive ones, and resolves when every request in flight is answered. */
  close(): Promise<void>;
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const app = buildApp(options);
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close: () => app.close(),
  };
}
