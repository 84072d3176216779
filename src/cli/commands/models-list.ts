// `rmbg models list`: the models of models/manifest.json, those added with `rmbg models add` or pulled with `rmbg
// models pull`, and the catalogue's not pulled yet: size, whether the weights are present and match their sha256,
// where they come from, licence, and the time per photo a batch here last took with it on each device.

import { dataDirOf } from '../../config/setting-rules.js';
import { cannotMake } from '../../engine/model/built-in-weights.js';
import { catalogue, pullCommand } from '../../engine/model/catalogue.js';
import { checkWeights, readManifest, resolveModel } from '../../engine/model/model-registry.js';
import { readTimings, type Timing } from '../../engine/model/model-timings.js';
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
      kind: entry.pulled ? ('pulled' as const) : ('user' as const),
      default: false,
      bytes: entry.bytes,
      status: await checkWeights(model),
      path: model.path,
      source: `${entry.pulled ? 'pulled' : 'added'} from ${entry.addedFrom}`,
      ...(entry.pulled && { licence: entry.pulled.licence }),
      contract:
        `${entry.preset ? `preset ${entry.preset}; ` : ''}input ${width}×${height}, mean ${mean.join(',')}, ` +
        `std ${std.join(',')} on ${range ?? '0-255'}, activation ${entry.activation ?? 'none'}`,
    };
  });
  return Promise.all([...builtIn, ...own]);
}

/** Catalogue models not pulled yet: what `rmbg models pull NAME` would bring, with its approximate size. */
function notPulledRows(installed: ReadonlySet<string>) {
  return catalogue()
    .filter((entry) => !installed.has(entry.name))
    .map((entry) => ({
      name: entry.name,
      kind: 'catalogue' as const,
      default: false,
      bytes: entry.approxBytes,
      status: 'not-pulled' as const,
      source: entry.url,
      licence: entry.licence,
      pull: pullCommand(entry),
    }));
}

const deviceTimes = (timings: Record<string, Timing> | undefined): string =>
  Object.entries(timings ?? {})
    .map(([device, timing]) => `${(timing.msPerPhoto / 1000).toFixed(2)} s/photo on the ${device.toUpperCase()}`)
    .join(', ');

export async function run(opts: Record<string, unknown>): Promise<number> {
  const dataDir = dataDirOf(opts.dataDir as string | undefined);
  const timings = readTimings(dataDir);
  const installed = await modelRows(opts.dataDir as string | undefined);
  const rows = [
    ...installed.map((row) => ({ ...row, ...(timings[row.name] && { timings: timings[row.name] }) })),
    ...notPulledRows(new Set(installed.map((row) => row.name))),
  ];
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return EXIT.ok;
  }
  for (const row of rows) {
    const size =
      row.kind === 'catalogue' ? `about ${(row.bytes / 1e6).toFixed(0)} MB` : `${(row.bytes / 1e6).toFixed(1)} MB`;
    const mark = row.default
      ? ' (default)'
      : row.kind === 'user'
        ? ' (yours)'
        : row.kind === 'pulled'
          ? ' (pulled)'
          : '';
    process.stdout.write(`${row.name}${mark}  ${size}  ${row.status}\n`);
    if ('path' in row) process.stdout.write(`  path:    ${row.path}\n`);
    process.stdout.write(`  source:  ${row.source}\n`);
    if ('licence' in row) process.stdout.write(`  licence: ${row.licence}\n`);
    if ('timings' in row && row.timings) process.stdout.write(`  time:    ${deviceTimes(row.timings)}\n`);
    if ('pull' in row) process.stdout.write(`  pull:    ${row.pull}\n`);
    if ('contract' in row) process.stdout.write(`  contract: ${row.contract}\n`);
    if (row.status === 'first-use') process.stdout.write('  made at the path above on its first use\n');
    if (row.status === 'missing')
      process.stdout.write(
        'problem' in row
          ? `  cannot be made: ${row.problem}\n`
          : row.kind === 'pulled'
            ? `  pull it again: rmbg models pull ${row.name}\n`
            : `  add it again: rmbg models add ${row.name} FILE\n`,
      );
  }
  return EXIT.ok;
}
