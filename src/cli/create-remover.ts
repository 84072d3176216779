// Builds the Remover for `rmbg remove`: the in-process engine (--local, or no API URL anywhere) or an API
// client (any base URL). Each mode's modules are imported only when it is chosen: onnxruntime and sharp for
// local mode, the HTTP client (undici) for remote mode.

import { keepingMetadata, localRemover, type Remover } from '../batch/remover.js';
import { requireSetting, type Config } from '../config/load-config.js';
import { engineOptionsOf, refuseEngineSettings } from '../library/engine-settings.js';
import type { REMOVE_TABLE } from '../settings/index.js';
import type { FlagsOf } from '../settings/setting.js';

export type RemoveFlags = FlagsOf<typeof REMOVE_TABLE>;

/**
 * Local by default: with no API URL from a flag, the environment or the settings file there is no server
 * to send to, so the photos are processed on this computer. An API URL from any of them selects remote
 * mode; --local forces local mode whatever is configured.
 */
export function runsLocally(flags: Pick<RemoveFlags, 'local'>, config: Config): boolean {
  return Boolean(flags.local) || config.apiUrl.value === undefined;
}

/** Said once on stderr when local mode was chosen for the user rather than asked for. */
export const LOCAL_BY_DEFAULT_NOTE =
  'rmbg: no API URL configured: removing backgrounds on this computer (as --local). To use a server, ' +
  "pass --api-url, set RMBG_API_URL or run 'rmbg config set api-url URL'.";

/** `photos`: how many photos the job holds, once they are found (undefined with --watch): a local engine's auto
 * weighs the GPU's slower start against it (engine/placement/place-session.ts). */
export async function createRemover(
  flags: RemoveFlags,
  config: Config,
  photos?: Promise<number | undefined>,
): Promise<Remover> {
  return keepingMetadata(await createBareRemover(flags, config, photos), flags);
}

async function createBareRemover(
  flags: RemoveFlags,
  config: Config,
  photos: Promise<number | undefined> | undefined,
): Promise<Remover> {
  if (runsLocally(flags, config)) {
    const { createEngine } = await import('../engine/index.js');
    return localRemover(await createEngine(engineOptionsOf(flags), { photos }), { raw: flags.raw });
  }
  refuseEngineSettings(flags);
  const { remoteRemover } = await import('../batch/remote-remover.js');
  return remoteRemover({
    baseUrl: requireSetting(config, 'apiUrl'),
    apiKey: requireSetting(config, 'apiKey'),
    timeoutMs: flags.timeoutMs as number,
    reading: { raw: flags.raw },
  });
}
