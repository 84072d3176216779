// `rmbg models remove NAME`: forgets a model added with `rmbg models add` or pulled with `rmbg models pull`, and
// deletes its file.

import { RmbgError } from '../../api/errors.js';
import { dataDirOf } from '../../config/setting-rules.js';
import { removeUserModel, userModelsDirOf } from '../../engine/model/user-models.js';
import { EXIT } from '../exit-codes.js';

export async function run(opts: Record<string, unknown>, positional: string[]): Promise<number> {
  const [name = ''] = positional;
  const dir = userModelsDirOf(dataDirOf(opts.dataDir as string | undefined));
  if (!removeUserModel(dir, name))
    throw new RmbgError(
      'usage_error',
      `no model '${name}' was added or pulled in ${dir} (built-in models cannot be removed)`,
    );
  process.stdout.write(`removed model ${name}\n`);
  return EXIT.ok;
}
