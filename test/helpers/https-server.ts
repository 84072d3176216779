// A real HTTPS server on a loopback address for tests, e.g. on 127.0.0.1:443 for image_url fetches.
// Port 443 is one per machine: when a parallel test process holds it, listening is retried until it frees.

import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void;

export interface HttpsServerOptions {
  /** PEM key and certificate, e.g. from createTestCa(). */
  key: string;
  cert: string;
  handler: RequestHandler;
  /** Loopback only: '127.0.0.1' (default) or '::1'. */
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** How long to keep retrying while the port is taken (EADDRINUSE). Default 60 s. */
  retryForMs?: number;
}

export interface TestHttpsServer {
  server: https.Server;
  port: number;
  /** e.g. https://127.0.0.1 (no port when it is 443). */
  origin: string;
  /** Closes the server, cutting any connection still open (a stalled test response, say). */
  close(): Promise<void>;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1']);

export async function startHttpsServer(options: HttpsServerOptions): Promise<TestHttpsServer> {
  const host = options.host ?? '127.0.0.1';
  if (!LOOPBACK_HOSTS.has(host)) throw new Error(`test HTTPS servers listen on loopback only, not ${host}`);
  const wantedPort = options.port ?? 0;
  const giveUpAt = Date.now() + (options.retryForMs ?? 60_000);

  const server = https.createServer({ key: options.key, cert: options.cert }, options.handler);
  for (;;) {
    try {
      await listen(server, wantedPort, host);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Date.now() > giveUpAt) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
    }
  }

  const port = (server.address() as AddressInfo).port;
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    port,
    origin: port === 443 ? `https://${hostInUrl}` : `https://${hostInUrl}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function listen(server: https.Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => {
      server.off('listening', onListening);
      reject(error);
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}
