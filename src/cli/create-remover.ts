// Builds the Remover for `rmbg remove`: the in-process engine (--local) or an API client (any base URL).
// Heavy modules (onnxruntime, sharp) are imported only for --local.

import { localRemover, type Remover } from '../batch/remover.js';
import { remoteRemover } from '../batch/remote-remover.js';
import { requireSetting, type Config } from '../config/load-config.js';
import { dataDirOf } from '../config/setting-rules.js';

export interface RemoverFlags {
  local?: boolean;
  model?: string;
  apiUrl?: string;
  apiKey?: string;
  timeout: number;
}

export async function createRemover(flags: RemoverFlags, config: Config): Promise<Remover> {
  if (flags.local) {
    const [{ createEngine }, { userModelsDirOf }] = await Promise.all([import('../engine/index.js'), import('../engine/user-models.js')]);
    return localRemover(await createEngine({ model: flags.model, userModelsDir: userModelsDirOf(dataDirOf(undefined)) }));
  }
  return remoteRemover({ baseUrl: requireSetting(config, 'apiUrl'), apiKey: requireSetting(config, 'apiKey'), timeoutMs: flags.timeout * 1000 });
}
