// `rmbg serve`: the API on this machine. Opens the store and the model, listens, prints the URL, and on
// SIGINT/SIGTERM stops accepting, lets requests in flight finish, closes everything and exits 0; a server that
// lost its SQLite store's lock has done the same by itself, and exits 1.

import { describeDevice } from '../../engine/runtime/device-report.js';
import type { Command } from 'commander';
import { SERVE_TABLE } from '../../settings/index.js';
import { settingFlags } from '../settings-flags.js';
import { EXIT } from '../exit-codes.js';

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

/** How `rmbg keys create` names the same store (the PostgreSQL URL is not repeated: it may hold a password). */
function storeFlagOf(service: { store: { engine: string }; dataDir: string }): string {
  return service.store.engine === 'postgres'
    ? '--store <the same URL>'
    : `--data-dir ${JSON.stringify(service.dataDir)}`;
}

/** Starts the service, unless a signal comes first: then exits at once, as nothing was served yet (the model may
 * take minutes to load, and a container's PID 1 ignores a SIGTERM it has no handler for: `docker stop` would wait
 * out its grace period). A process left with a stale store lock is taken over at the next start (pid-lock.ts). */
async function startUnlessStopped(
  flags: ReturnType<typeof settingFlags>,
  signalled: Promise<NodeJS.Signals>,
): Promise<import('../../library/create-server.js').LocalService> {
  // The model (onnxruntime, ~90 MB of weights), fastify and SQLite load only when this command runs.
  const starting = import('../../library/create-server.js').then(({ startLocalService }) => startLocalService(flags));
  const first = await Promise.race([starting, signalled]);
  if (typeof first !== 'string') return first;
  await new Promise((resolve) => process.stderr.write(`rmbg: ${first} while starting; exiting\n`, resolve));
  process.exit(EXIT.ok);
}

export async function run(_opts: Record<string, unknown>, _args: string[], command: Command): Promise<number> {
  const flags = settingFlags(command, SERVE_TABLE);
  const signalled = untilSignal();
  const service = await startUnlessStopped(flags, signalled);
  try {
    if (flags.allowPrivateUrls) {
      process.stderr.write(
        'rmbg: WARNING: --allow-private-urls lets image_url reach this machine and its private network; use it for local testing only\n',
      );
    }
    if (!(await service.store.listKeys()).some((key) => key.revokedAt === null)) {
      process.stderr.write(
        `rmbg: no API keys yet; create one with: rmbg keys create ${storeFlagOf(service)} --credits 100\n`,
      );
    }
    process.stdout.write(`rmbg: listening on ${service.url} (the model is ${describeDevice(service.device)})\n`);
    if (flags.ui !== false) process.stderr.write(`rmbg: web page at ${service.url}/ (turn it off with --no-ui)\n`);

    const ended = await Promise.race([signalled, service.lost.then(() => 'lost' as const)]);
    // Its store's lock lost, the server has closed itself and said why (create-server.ts): a failure, exit 1.
    if (ended === 'lost') return EXIT.failed;
    process.stderr.write(`rmbg: ${ended}: finishing requests in flight, then exiting\n`);
  } finally {
    await service.close();
  }
  return EXIT.ok;
}
