// `rmbg models add NAME FILE --preset …`: registers the user's own ONNX model in the data directory with its
// contract (input size, normalisation, activation, tensor names), after loading it once to check that
// onnxruntime can run it and that the named tensors exist. Then `--model NAME` works for remove and serve.

import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { RmbgError } from '../../api/errors.js';
import { dataDirOf } from '../../config/setting-rules.js';
import { contractFromFlags, type ContractFlags } from '../../engine/model/model-contract.js';
import { readManifest } from '../../engine/model/model-registry.js';
import { ModelSession } from '../../engine/model/model-session.js';
import { addUserModel, USER_MODEL_NAME, userModelsDirOf } from '../../engine/model/user-models.js';
import { EXIT } from '../exit-codes.js';

export async function run(opts: Record<string, unknown>, positional: string[]): Promise<number> {
  const [name = '', file = ''] = positional;
  if (!USER_MODEL_NAME.test(name))
    throw new RmbgError(
      'usage_error',
      `model name '${name}' must be 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  if (readManifest().models.some((m) => m.name === name))
    throw new RmbgError('usage_error', `'${name}' is a built-in model; choose another name`);
  const path = resolve(file);
  if (!existsSync(path) || !statSync(path).isFile())
    throw new RmbgError('usage_error', `model file ${path} does not exist`);
  const { preset, ...contract } = contractFromFlags(opts as ContractFlags);

  // Loading it once proves onnxruntime can read it and that the tensors the contract names exist.
  const session = await ModelSession.load(
    { name, contract, path, fix: 'check the file and the flags' },
    { threads: 1 },
  );
  const problems = session.contractMismatches();
  await session.release();
  if (problems.length)
    throw new RmbgError(
      'usage_error',
      `model file ${path} does not fit the contract: ${problems.join('; ')}; name the tensors with --input/--output`,
    );

  const dir = userModelsDirOf(dataDirOf(opts.dataDir as string | undefined));
  const added = await addUserModel(dir, { name, ...contract, ...(preset ? { preset } : {}), addedFrom: path }, path);
  if (opts.json) process.stdout.write(`${JSON.stringify(added, null, 2)}\n`);
  else
    process.stdout.write(
      `added model ${name} (${(added.bytes / 1e6).toFixed(1)} MB, sha256 ${added.sha256.slice(0, 12)}…) ` +
        `to ${dir}\nuse it with: rmbg remove PHOTO --local --model ${name}\n`,
    );
  return EXIT.ok;
}
