// `rmbg serve` as a function: the store (the data directory's SQLite file under its lock, or a PostgreSQL
// database shared with other servers), the model, the service, the metrics and the HTTP server, started
// together and closed in reverse order. The command and createServer() both run it.

import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { RmbgError } from '../api/errors.js';
import { acquirePidLock } from '../platform/pid-lock.js';
import { dataDirOf } from '../config/setting-rules.js';
import type { DeviceReport } from '../api/device.js';
import { createEngine } from '../engine/index.js';
import { createService } from '../service/index.js';
import { imageUrlFetcher } from '../image-url/image-url.js';
import { startServer } from '../server/start-server.js';
import { trustedProxies } from '../server/trusted-proxies.js';
import { createMetrics } from '../server/metrics.js';
import { openStore, storeTarget, type Store } from '../store/index.js';
import { engineOptionsOf } from './engine-settings.js';
import { metricsTokenOf } from './metrics-token.js';
import { SERVE_TABLE } from '../settings/index.js';
import { checkOptions, settingsFor } from '../settings/setting.js';
import type { RmbgServer, ServerOptions } from './server-options.js';

export interface LocalService {
  /** e.g. http://127.0.0.1:5000 (the real port when port 0 was asked for). */
  url: string;
  dataDir: string;
  store: Store;
  /** Where the model runs. */
  device: DeviceReport;
  /**
   * The settings in force, read back from the parts that use them: the service's and the app's (by their rows'
   * names, seconds as milliseconds), the engine's options, and those this function uses itself. A row that
   * reaches none of them is missing here (test/integration/settings/settings-reach-consumers.test.ts).
   */
  settings(): Record<string, unknown>;
  /** Stops accepting, lets requests in flight finish, then closes the service, the model and the store. */
  close(): Promise<void>;
  /** Resolves, with why, once the server has closed itself as its SQLite store's lock was lost; never on PostgreSQL. */
  lost: Promise<string>;
}

export async function startLocalService(options: ServerOptions = {}): Promise<LocalService> {
  const settings = checkOptions(SERVE_TABLE, options);
  // The service's and the app's rows reach them by name (settings/server.ts' `to` column).
  const serviceSettings = settingsFor(SERVE_TABLE, 'service', settings);
  const appSettings = settingsFor(SERVE_TABLE, 'app', settings);
  // Checked before anything opens: a bad token, proxy list or device changes nothing.
  const metricsToken = metricsTokenOf(options);
  const trustProxy = trustedProxies(options.trustProxy ?? []).entries;
  const dataDir = dataDirOf(options.dataDir);
  const engineOptions = engineOptionsOf({
    ...settings,
    dataDir,
    warmUp: true,
    runTimeoutMs: serviceSettings.processingTimeoutMs,
  });
  const target = storeTarget(options.store, dataDir);
  const closers: Array<() => unknown> = [];
  let closing: Promise<void> | undefined;
  const closeAll = () =>
    (closing ??= (async () => {
      for (const close of closers.splice(0).reverse()) await close();
    })());
  let stoppedBy: (why: string) => void = () => undefined;
  const lost = new Promise<string>((resolve) => (stoppedBy = resolve));
  try {
    // A SQLite file has one server: its lock lets that server settle every lease left behind at once when it
    // starts. Servers on PostgreSQL share the database and settle each other's leases only once they expire.
    const soleServer = target.engine === 'sqlite';
    if (soleServer) {
      // Beside the file, wherever --store put it (for the default store: in the data directory, as always); taken
      // before the store is opened, so a refused server never migrates the store another one is serving.
      const folder = dirname(target.path);
      mkdirSync(folder, { recursive: true, mode: 0o700 });
      closers.push(
        acquirePidLock(
          join(folder, 'serve.lock'),
          (holder) =>
            `another rmbg serve (${holder}) uses the SQLite store in ${folder}; stop it or choose another \`dataDir\` ` +
            `or \`store\` (several servers share a PostgreSQL \`store\`)`,
          (holder) => {
            // Serving on would let two servers settle one store's leases: this one stops, as if asked to.
            const why =
              holder === undefined
                ? `the lock of the SQLite store in ${folder} (serve.lock) was removed`
                : `another rmbg serve (${holder}) took over the SQLite store in ${folder}`;
            process.stderr.write(`rmbg: error: ${why}; this server stops serving\n`);
            void closeAll().finally(() => stoppedBy(why));
          },
        ),
      );
    }
    const store = await openStore(target);
    closers.push(() => store.close());
    // Loaded and warmed before the server listens (on the GPU, the warm-up compiles the shaders); a CPU run
    // that has not answered when its request timed out has its worker set aside (inference-worker.ts).
    const engine = await createEngine(engineOptions);
    closers.push(() => engine.close());
    const metrics = createMetrics();
    metrics.setDevice(engine.device);
    const service = await createService({
      store,
      engine,
      ...serviceSettings,
      fetchImage: imageUrlFetcher({ allowPrivate: settings.allowPrivateUrls }),
      soleServer,
      observer: metrics.observer,
    });
    metrics.status = () => service.status();
    closers.push(() => service.close());
    const server = await startServer({
      host: settings.host,
      port: settings.port,
      service,
      device: engine.device,
      ...appSettings,
      metrics,
      metricsToken,
      trustProxy,
      logger: { level: 'warn', stream: process.stderr },
    }).catch((error: NodeJS.ErrnoException) => {
      throw new RmbgError(
        'usage_error',
        `cannot listen on ${settings.host}:${settings.port} (${error.code ?? error.message}); choose another \`port\` or \`host\``,
        { cause: error },
      );
    });
    closers.push(() => server.close());
    const inForce = () => ({
      ...engineOptions,
      ...service.settings(),
      ...server.settings,
      host: new URL(server.url).hostname,
      port: server.port,
      dataDir,
      store: store.path,
      metricsToken,
      trustProxy,
      allowPrivateUrls: settings.allowPrivateUrls,
    });
    return { url: server.url, dataDir, store, device: engine.device, settings: inForce, close: closeAll, lost };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** `rmbg serve` inside a Node program: the same API, options and defaults as the command. */
export async function createServer(options: ServerOptions = {}): Promise<RmbgServer> {
  const service = await startLocalService(options);
  return { url: service.url, device: service.device, close: service.close, [Symbol.asyncDispose]: service.close };
}
