// `rmbg models list`: the models of models/manifest.json and those added with `rmbg models add`, with size,
// whether the weights are present and match their sha256, and where they come from (licence for built-ins,
// preset and contract for the user's own).

import { dataDirOf } from '../../config/setting-rules.js';
import { cannotMake } from '../../engine/model/built-in-weights.js';
import { checkWeights, readManifest, resolveModel } from '../../engine/model/model-registry.js';
import { readUserModels, userModelsDirOf } from '../../engine/model/user-models.js';
import { EXIT } from '../exit-codes.js';

/** Every model, built-in and the user's, with whether its weights are there and match (`rmbg doctor` shows them too). */
export async function modelRows(dataDir: string | undefined) {
  const manifest = readManifest();
  const userDir = userModelsDirOf(dataDirOf(dataDir));
  const builtIn = manifest.models.map(async (entry) => {
    const model = resolveModel(entry.name);
    const status = await checkWeights(model);
    return {
      name: entry.name,
      kind: 'built-in' as const,
      default: entry.name === manifest.default,
      bytes: entry.bytes,
      status,
      ...(status === 'missing' && { problem: cannotMake(entry) }),
      path: model.path,
      source: entry.derivedFrom
        ? `derived on first use from ${entry.derivedFrom.model} (${entry.derivedFrom.transform})`
        : `${entry.source.package}@${entry.source.version} ${entry.source.resource}`,
      licence: entry.licence,
    };
  });
  const own = readUserModels(userDir).map(async (entry) => {
    const model = resolveModel(entry.name, userDir);
    const [, , height, width] = entry.input.shape;
    const { mean, std, range } = entry.normalization;
    return {
      name: entry.name,
      kind: 'user' as const,
      default: false,
      bytes: entry.bytes,
      status: await checkWeights(model),
      path: model.path,
      source: `added from ${entry.addedFrom}`,
      contract: `${entry.preset ? `preset ${entry.preset}; ` : ''}input ${width}×${height}, mean ${mean.join(',')}, std ${std.join(',')} on ${range ?? '0-255'}, activation ${entry.activation ?? 'none'}`,
    };
  });
  return Promise.all([...builtIn, ...own]);
}

export async function run(opts: Record<string, unknown>): Promise<number> {
  const rows = await modelRows(opts.dataDir as string | undefined);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return EXIT.ok;
  }
  for (const row of rows) {
    const size = `${(row.bytes / 1e6).toFixed(1)} MB`;
    process.stdout.write(
      `${row.name}${row.default ? ' (default)' : ''}${row.kind === 'user' ? ' (yours)' : ''}  ${size}  ${row.status}\n  path:    ${row.path}\n  source:  ${row.source}\n`,
    );
    if ('licence' in row) process.stdout.write(`  licence: ${row.licence}\n`);
    if ('contract' in row) process.stdout.write(`  contract: ${row.contract}\n`);
    if (row.status === 'first-use') process.stdout.write('  made at the path above on its first use\n');
    if (row.status === 'missing')
      process.stdout.write(
        'problem' in row ? `  cannot be made: ${row.problem}\n` : `  add it again: rmbg models add ${row.name} FILE\n`,
      );
  }
  return EXIT.ok;
}
