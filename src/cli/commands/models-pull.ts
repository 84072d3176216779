// `rmbg models pull NAME`: downloads a model of rmbg's catalogue (catalogue.ts) into the user models folder,
// where `--model NAME` then finds it. Weights under a non-commercial licence need `--accept-licence`.

import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { RmbgError } from '../../api/errors.js';
import { dataDirOf } from '../../config/setting-rules.js';
import { CATALOGUE_ENV, type CatalogueModel, catalogue, catalogueModel } from '../../engine/model/catalogue.js';
import { fileMatches } from '../../engine/model/weight-check.js';
import { lockModelPull } from '../../engine/model/model-locks.js';
import { pullModel } from '../../engine/model/pull-model.js';
import { readUserModels, userModelsDirOf } from '../../engine/model/user-models.js';
import { EXIT } from '../exit-codes.js';
import { downloadRenderer } from '../render-download.js';

/** The licence gate: weights not free for commercial use come only after the user names their licence. */
export function checkLicenceAccepted(model: CatalogueModel, accepted: string | undefined): void {
  if (!model.licenceGate || accepted === model.licenceGate) return;
  throw new RmbgError(
    'usage_error',
    `${model.name} is licensed ${model.licence}${model.licenceUrl ? `; terms: ${model.licenceUrl}` : ''}. ` +
      `To accept the licence and pull it: rmbg models pull ${model.name} --accept-licence ${model.licenceGate}`,
  );
}

/** Pulls `name` into the data directory's models folder, with a progress bar or lines on stderr. */
export async function pullByName(
  name: string,
  options: { dataDir?: string; from?: string; acceptLicence?: string },
): Promise<void> {
  const model = catalogueModel(name);
  if (!model)
    throw new RmbgError(
      'usage_error',
      `'${name}' is not in rmbg's catalogue; pullable models: ${catalogue()
        .map((m) => m.name)
        .join(', ')}`,
    );
  checkLicenceAccepted(model, options.acceptLicence);
  if (process.env[CATALOGUE_ENV])
    process.stderr.write(`rmbg: using the catalogue in ${CATALOGUE_ENV}=${process.env[CATALOGUE_ENV]}\n`);
  const dir = userModelsDirOf(dataDirOf(options.dataDir));
  await mkdir(dir, { recursive: true });
  // One pull of a model at a time: a second waits, then finds it pulled (or pulls it, if the first failed).
  const release = await lockModelPull(dir, name, (holder) =>
    process.stderr.write(`rmbg: another pull of ${name} is running (${holder}); waiting for it\n`),
  );
  try {
    await pullUnlessPulled(model, dir, options.from);
  } finally {
    release();
  }
}

/** Pulls `model` into `dir` unless it is there, pulled and verified; with a progress bar or lines on stderr. */
async function pullUnlessPulled(model: CatalogueModel, dir: string, from: string | undefined): Promise<void> {
  const { name } = model;
  const pulled = readUserModels(dir).find((m) => m.name === name && m.pulled);
  if (
    pulled &&
    existsSync(join(dir, pulled.file)) &&
    (await fileMatches(join(dir, pulled.file), pulled.bytes, pulled.sha256))
  ) {
    process.stderr.write(`rmbg: ${name} is already pulled and verified (${join(dir, pulled.file)})\n`);
    return;
  }
  const progress = downloadRenderer(name);
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once('SIGINT', interrupt);
  try {
    const installed = await pullModel(model, dir, {
      ...(from ? { from } : {}),
      onProgress: progress.update,
      signal: stop.signal,
    });
    progress.stop();
    process.stderr.write(
      `rmbg: pulled ${name} (${(installed.bytes / 1e6).toFixed(1)} MB, ${model.pin.algorithm} ${model.pin.hex} ` +
        `as pinned, sha256 ${installed.sha256}) into ${dir}\n`,
    );
  } catch (error) {
    progress.stop();
    if (stop.signal.aborted)
      throw new RmbgError('interrupted', `interrupted: run 'rmbg models pull ${name}' again to resume the download`);
    throw error;
  } finally {
    process.off('SIGINT', interrupt);
  }
}

export async function run(opts: Record<string, unknown>, positional: string[]): Promise<number> {
  const [name = ''] = positional;
  await pullByName(name, {
    dataDir: opts.dataDir as string | undefined,
    from: opts.from as string | undefined,
    acceptLicence: opts.acceptLicence as string | undefined,
  });
  process.stdout.write(`use it with: rmbg remove PHOTO --local --model ${name}\n`);
  return EXIT.ok;
}
