// `rmbg models list`: the models of models/manifest.json with size, whether the weights are present and
// match their sha256, where they come from and their licence.

import { checkWeights, readManifest, resolveModel } from '../../engine/model-registry.js';
import { EXIT } from '../exit-codes.js';

export async function run(opts: Record<string, unknown>): Promise<number> {
  const manifest = readManifest();
  const rows = await Promise.all(
    manifest.models.map(async (entry) => {
      const model = resolveModel(entry.name);
      return {
        name: entry.name,
        default: entry.name === manifest.default,
        bytes: entry.bytes,
        status: await checkWeights(model),
        path: model.path,
        source: `${entry.source.package}@${entry.source.version} ${entry.source.resource}`,
        licence: entry.licence,
      };
    }),
  );
  if (opts['json']) {
    process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
    return EXIT.ok;
  }
  for (const row of rows) {
    const size = `${(row.bytes / 1e6).toFixed(1)} MB`;
    process.stdout.write(`${row.name}${row.default ? ' (default)' : ''}  ${size}  ${row.status}\n  source:  ${row.source}\n  licence: ${row.licence}\n`);
    if (row.status === 'missing') process.stdout.write(`  install: npm run models -- ${row.name}\n`);
  }
  return EXIT.ok;
}
