// `rmbg serve`: the API on this machine. Opens the store and the model, listens, prints the URL, and on
// SIGINT/SIGTERM stops accepting, lets requests in flight finish, closes everything and exits 0.

import { join } from 'node:path';
import { RmbgError } from '../../api/errors.js';
import { acquirePidLock } from '../../platform/pid-lock.js';
import { createService } from '../../service/index.js';
import { imageUrlFetcher } from '../../service/image-url.js';
import { startServer } from '../../server/start-server.js';
import { openStore } from '../../store/index.js';
import { EXIT } from '../exit-codes.js';
import { dataDirOf } from '../local-store.js';

interface ServeFlags {
  host: string;
  port: number;
  dataDir?: string;
  creditsPerImage: number;
  rateLimit: number;
  maxQueue: number;
  processingTimeout: number;
  bodyTimeout: number;
  model?: string;
  allowPrivateUrls?: boolean;
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      // A second signal while draining means "now": leave without waiting for requests in flight.
      const force = (again: NodeJS.Signals) => {
        process.stderr.write(`rmbg: ${again} again; exiting without waiting for requests in flight\n`);
        process.exit(EXIT.interrupted);
      };
      process.once('SIGINT', force);
      process.once('SIGTERM', force);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export async function run(opts: Record<string, unknown>, _args: string[]): Promise<number> {
  const flags = opts as unknown as ServeFlags;
  const dataDir = dataDirOf(flags.dataDir);
  const store = openStore(dataDir);
  const closers: Array<() => unknown> = [() => store.close()];
  // One server per data directory: on start the service refunds charges that never finished, which would
  // refund a second server's requests in flight.
  try {
    closers.push(acquirePidLock(join(dataDir, 'serve.lock'), (owner) => `another rmbg serve (pid ${owner}) uses the data directory ${dataDir}; stop it or choose another --data-dir`));
  } catch (error) {
    store.close();
    throw error;
  }
  const closeAll = async () => {
    for (const close of closers.reverse()) await close();
  };
  try {
    // The model (onnxruntime, ~90 MB of weights) loads only when this command runs.
    const { createEngine } = await import('../../engine/index.js');
    const engine = await createEngine({ model: flags.model });
    closers.push(() => engine.close());
    const service = createService({
      store,
      engine,
      creditsPerImage: flags.creditsPerImage,
      rateLimitPerMinute: flags.rateLimit,
      maxQueue: flags.maxQueue,
      processingTimeoutMs: flags.processingTimeout * 1000,
      fetchImage: imageUrlFetcher({ allowPrivate: flags.allowPrivateUrls === true }),
    });
    closers.push(() => service.close());
    const server = await startServer({
      host: flags.host,
      port: flags.port,
      service,
      bodyTimeoutMs: flags.bodyTimeout * 1000,
      logger: { level: 'warn', stream: process.stderr },
    }).catch((error: NodeJS.ErrnoException) => {
      throw new RmbgError('usage_error', `cannot listen on ${flags.host}:${flags.port} (${error.code ?? error.message}); choose another --port or --host`, { cause: error });
    });
    closers.push(() => server.close());

    if (flags.allowPrivateUrls) {
      process.stderr.write('rmbg: WARNING: --allow-private-urls lets image_url reach this machine and its private network; use it for local testing only\n');
    }
    if (!store.listKeys().some((key) => key.revokedAt === null)) {
      process.stderr.write(`rmbg: no API keys yet; create one with: rmbg keys create --data-dir ${JSON.stringify(dataDir)} --credits 100\n`);
    }
    process.stdout.write(`rmbg: listening on ${server.url}\n`);

    const signal = await untilSignal();
    process.stderr.write(`rmbg: ${signal}: finishing requests in flight, then exiting\n`);
    await closeAll();
    return EXIT.ok;
  } catch (error) {
    await closeAll();
    throw error;
  }
}
