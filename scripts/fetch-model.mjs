#!/usr/bin/env node
// Provisions model weights into models/ from the npm package named in models/manifest.json.
// Why `npm pack` and not a dependency: installing @imgly/background-removal-data pulls 142 MB of
// onnxruntime-web we never use; `npm pack` fetches only the tarball through npm's own cache (so it
// keeps working offline once cached), and we extract just the chunks of the models we need.
//
// A model with `derivedFrom` (isnet-medium-fp32) is not downloaded: it is computed here from its source model's
// verified file by scripts/lib/onnx-fp32.mjs, deterministically, and checked against its own pinned sha256.
//
// Usage: node scripts/fetch-model.mjs [NAME ...|--all]   (default: the manifest's default model)
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  openSync,
  writeSync,
  closeSync,
  fsyncSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { convertToFp32 } from './lib/onnx-fp32.mjs';

const modelsDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'models');
const manifest = JSON.parse(readFileSync(join(modelsDir, 'manifest.json'), 'utf8'));

function sha256File(path) {
  const hash = createHash('sha256');
  hash.update(readFileSync(path));
  return hash.digest('hex');
}

function isVerified(model) {
  const path = join(modelsDir, model.file);
  return existsSync(path) && statSync(path).size === model.bytes && sha256File(path) === model.sha256;
}

function packTarball(spec, cacheDir) {
  mkdirSync(cacheDir, { recursive: true });
  // npm verifies the registry's integrity hash of the tarball for us.
  const out = execFileSync('npm', ['pack', spec, '--json', '--pack-destination', cacheDir], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return join(cacheDir, JSON.parse(out)[0].filename);
}

/** Writes bytes to models/<file> through a temp file, fsync and rename, after checking size and sha256. */
function writeVerified(model, bytes) {
  const digest = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length !== model.bytes || digest !== model.sha256) {
    throw new Error(
      `${model.name}: made ${bytes.length} bytes, sha256 ${digest}; manifest expects ${model.bytes} bytes, sha256 ${model.sha256}`,
    );
  }
  const target = join(modelsDir, model.file);
  const temp = `${target}.${process.pid}.tmp`;
  const fd = openSync(temp, 'w');
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, target);
}

function derive(model) {
  const { model: sourceName, transform, keepOutputs } = model.derivedFrom;
  const source = manifest.models.find((m) => m.name === sourceName);
  if (!source) throw new Error(`${model.name} is derived from unknown model ${sourceName}`);
  provision(source);
  if (transform !== 'fp32') throw new Error(`${model.name}: unknown transform ${transform}`);
  const { bytes } = convertToFp32(readFileSync(join(modelsDir, source.file)), {
    keepOutputs,
    sourceSha256: source.sha256,
  });
  writeVerified(model, bytes);
}

function provision(model) {
  if (isVerified(model)) {
    console.log(`rmbg: model ${model.name} present and verified (sha256 ${model.sha256.slice(0, 12)}…)`);
    return;
  }
  if (model.derivedFrom) {
    console.log(
      `rmbg: deriving model ${model.name} from ${model.derivedFrom.model} (${model.derivedFrom.transform}) …`,
    );
    derive(model);
  } else {
    console.log(`rmbg: assembling model ${model.name} from ${model.source.package}@${model.source.version} …`);
    assemble(model);
  }
  console.log(`rmbg: model ${model.name} ready: ${join('models', model.file)} (${model.bytes} bytes, sha256 verified)`);
}

function assemble(model) {
  const { package: pkg, version, resource } = model.source;
  const cacheDir = join(modelsDir, '.cache', `${pkg.replace('/', '+')}@${version}`);
  const tarball = packTarball(`${pkg}@${version}`, cacheDir);
  execFileSync('tar', ['-xzf', tarball, '-C', cacheDir, 'package/dist/resources.json'], { stdio: 'inherit' });
  const resources = JSON.parse(readFileSync(join(cacheDir, 'package/dist/resources.json'), 'utf8'));
  const entry = resources[resource];
  if (!entry) throw new Error(`${pkg}@${version} has no resource ${resource}`);
  const chunkPaths = entry.chunks.map((c) => `package/dist/${c.hash}`);
  execFileSync('tar', ['-xzf', tarball, '-C', cacheDir, ...chunkPaths], { stdio: 'inherit' });

  const target = join(modelsDir, model.file);
  const temp = `${target}.${process.pid}.tmp`;
  const fd = openSync(temp, 'w');
  const hash = createHash('sha256');
  let written = 0;
  try {
    for (const chunk of entry.chunks) {
      const bytes = readFileSync(join(cacheDir, 'package/dist', chunk.hash));
      if (chunk.offsets[0] !== written || bytes.length !== chunk.offsets[1] - chunk.offsets[0]) {
        throw new Error(`chunk ${chunk.hash} does not fit at offset ${written}`);
      }
      hash.update(bytes);
      writeSync(fd, bytes);
      written += bytes.length;
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  const digest = hash.digest('hex');
  if (written !== model.bytes || digest !== model.sha256) {
    rmSync(temp, { force: true });
    throw new Error(
      `${model.name}: assembled ${written} bytes, sha256 ${digest}; manifest expects ${model.bytes} bytes, sha256 ${model.sha256}`,
    );
  }
  renameSync(temp, target);
  // npm's cache keeps the tarball for offline re-provisioning; our copy is not needed.
  rmSync(cacheDir, { recursive: true, force: true });
}

const args = process.argv.slice(2);
const wanted = args.includes('--all')
  ? manifest.models
  : (args.length ? args : [manifest.default]).map((name) => {
      const model = manifest.models.find((m) => m.name === name);
      if (!model) throw new Error(`unknown model ${name}; known: ${manifest.models.map((m) => m.name).join(', ')}`);
      return model;
    });

for (const model of wanted) provision(model);
