// Listens with the app on a host and port and gives back the real URL (port 0 picks a free port) and
// a close() that stops accepting and waits for the requests in flight.

import type { AddressInfo } from 'node:net';
import { appSettingsOf, buildApp, type AppOptions, type AppSettings } from './build-app.js';

/** The app's options and where it listens (createServer()'s options are library/server-options.ts' ServerOptions). */
export interface ListenOptions extends AppOptions {
  host: string;
  port: number;
}

export interface RunningServer {
  url: string;
  port: number;
  /** The app's settings in force, read back from Node's server and the routes. */
  settings: Partial<AppSettings>;
  /** Stops accepting connections, answers 503 on kept-alive ones, and resolves when every request in flight is answered. */
  close(): Promise<void>;
}

export async function startServer(options: ListenOptions): Promise<RunningServer> {
  const app = buildApp(options);
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    settings: appSettingsOf(app),
    close: () => app.close(),
  };
}
