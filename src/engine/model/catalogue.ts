// The models `rmbg models pull NAME` can download: each with the URL its publisher (here rembg's release) serves it
// from, the hash that publisher pins in its own source, its licence, and the contract rembg's session runs it with
// (rembg/sessions/*.py at danielgatis/rembg 684f8e9: the size, mean/std, a sigmoid for BiRefNet's logits, and the
// min-max stretch every session applies). Sizes are approximate (the server's Content-Length decides); the pinned
// hash is what is checked. RMBG_MODEL_CATALOGUE names a JSON file that replaces this list: a mirror's or a test's
// aid, said on stderr whenever it is used, never a silent change of where models come from.

import { readFileSync } from 'node:fs';
import { RmbgError } from '../../api/errors.js';
import { type ModelContract, PRESET_NAMES, PRESETS, type PresetName } from './model-contract.js';
import { USER_MODEL_NAME } from './user-models.js';

export interface CatalogueModel {
  /** What --model and `rmbg models pull` take (rembg's name for the same weights). */
  name: string;
  /** The file's name at its source, also looked up under --from URL|DIR. */
  file: string;
  url: string;
  /** Approximate size in bytes, said before the download; the server's Content-Length governs the download. */
  approxBytes: number;
  /** The hash the publisher pins: rembg pins md5 for most files, sha256 for some. */
  pin: { algorithm: 'md5' | 'sha256'; hex: string };
  licence: string;
  /** Weights not free for commercial use: pulled only with `--accept-licence <this>`. */
  licenceGate?: string;
  /** Where the licence terms are, for the gate's message. */
  licenceUrl?: string;
  preset: PresetName;
  contract: ModelContract;
  /** The version of the weights (the publisher's epoch or release). */
  version: string;
  /** What URL, hash and contract were checked against: the publisher's file and lines. */
  checkedAgainst: string;
}

const REMBG = 'https://github.com/danielgatis/rembg/releases/download/v0.0.0';
const MB = 1_000_000;
const rembgAt = (file: string, lines: string): string => `danielgatis/rembg@684f8e9 rembg/sessions/${file} ${lines}`;

/** A preset with rembg's min-max stretch after it, and any values its session sets differently. */
const asRembg = (preset: PresetName, change: Partial<ModelContract> = {}): ModelContract => ({
  ...(structuredClone(PRESETS[preset]) as ModelContract),
  ...change,
  stretch: 'min-max',
});

const IMAGENET_MEAN: [number, number, number] = [0.485, 0.456, 0.406];
const IMAGENET_STD: [number, number, number] = [0.229, 0.224, 0.225];

/** BiRefNet (github.com/ZhengPeng7/BiRefNet, MIT): rembg's BiRefNetSessionGeneral, sigmoid then min-max. */
function birefnet(name: string, file: string, md5: string, approxMb: number, version: string, lines: string) {
  const session = `${name.replaceAll('-', '_')}.py`;
  return {
    name,
    file,
    url: `${REMBG}/${file}`,
    approxBytes: approxMb * MB,
    pin: { algorithm: 'md5', hex: md5 },
    licence: 'MIT (BiRefNet, github.com/ZhengPeng7/BiRefNet)',
    preset: 'birefnet',
    contract: asRembg('birefnet'),
    version,
    checkedAgainst: rembgAt(session, lines),
  } satisfies CatalogueModel;
}

/** U²-Net family (github.com/xuebinqin/U-2-Net, Apache-2.0): 320², ImageNet mean/std, probabilities, min-max. */
function u2net(name: string, md5: string, approxMb: number, lines: string, licence: string) {
  return {
    name,
    file: `${name}.onnx`,
    url: `${REMBG}/${name}.onnx`,
    approxBytes: approxMb * MB,
    pin: { algorithm: 'md5', hex: md5 },
    licence,
    preset: 'u2net',
    contract: asRembg('u2net'),
    version: 'rembg v0.0.0 release',
    checkedAgainst: rembgAt(`${name}.py`, lines),
  } satisfies CatalogueModel;
}

const U2NET_LICENCE = 'Apache-2.0 (U²-Net, github.com/xuebinqin/U-2-Net)';

export const CATALOGUE: readonly CatalogueModel[] = [
  birefnet(
    'birefnet-general',
    'BiRefNet-general-epoch_244.onnx',
    '7a35a0141cbbc80de11d9c9a28f52697',
    973,
    'general, epoch 244',
    'l.35 (ImageNet, 1024²), l.39–44 (sigmoid, min-max), l.66–70 (URL, md5)',
  ),
  birefnet(
    'birefnet-general-lite',
    'BiRefNet-general-bb_swin_v1_tiny-epoch_232.onnx',
    '4fab47adc4ff364be1713e97b7e66334',
    224,
    'general, Swin-T backbone, epoch 232',
    'l.27–31 (URL, md5); predict from birefnet_general.py',
  ),
  birefnet(
    'birefnet-portrait',
    'BiRefNet-portrait-epoch_150.onnx',
    'c3a64a6abf20250d090cd055f12a3b67',
    973,
    'portrait, epoch 150',
    'l.27–31 (URL, md5); predict from birefnet_general.py',
  ),
  birefnet(
    'birefnet-dis',
    'BiRefNet-DIS-epoch_590.onnx',
    '2d4d44102b446f33a4ebb2e56c051f2b',
    973,
    'DIS5K, epoch 590',
    'l.27–31 (URL, md5); predict from birefnet_general.py',
  ),
  birefnet(
    'birefnet-hrsod',
    'BiRefNet-HRSOD_DHU-epoch_115.onnx',
    'c017ade5de8a50ff0fd74d790d268dda',
    973,
    'HRSOD (DHU), epoch 115',
    'l.27–31 (URL, md5); predict from birefnet_general.py',
  ),
  birefnet(
    'birefnet-massive',
    'BiRefNet-massive-TR_DIS5K_TR_TEs-epoch_420.onnx',
    '33e726a2136a3d59eb0fdf613e31e3e9',
    973,
    'massive training set, epoch 420',
    'l.27–31 (URL, md5); predict from birefnet_general.py',
  ),
  u2net('u2net', '60024c5c889badc19c04ad937298a77b', 176, 'l.32 (ImageNet, 320²), l.38–41, l.63–67', U2NET_LICENCE),
  u2net('u2netp', '8e83ca70e441ab06c318d82300c84806', 5, 'l.28 (ImageNet, 320²), l.34–37, l.55–59', U2NET_LICENCE),
  u2net(
    'u2net_human_seg',
    'c09ddc2e0104f800e3e1bb4652583d1f',
    176,
    'l.32 (ImageNet, 320²), l.38–41, l.63–67',
    U2NET_LICENCE,
  ),
  u2net(
    'silueta',
    '55e59e0d8062d2f5d013f4725ee84782',
    44,
    'l.32 (ImageNet, 320²), l.38–41, l.65–69',
    'Apache-2.0 (a reduced U²-Net, github.com/xuebinqin/U-2-Net/issues/295)',
  ),
  {
    name: 'isnet-general-use',
    file: 'isnet-general-use.onnx',
    url: `${REMBG}/isnet-general-use.onnx`,
    approxBytes: 179 * MB,
    pin: { algorithm: 'md5', hex: 'fc16ebd8b0c10d971d3513d564d01e29' },
    licence: 'Apache-2.0 (DIS, github.com/xuebinqin/DIS)',
    preset: 'isnet',
    contract: asRembg('isnet'),
    version: 'rembg v0.0.0 release',
    checkedAgainst: rembgAt('dis_general_use.py', 'l.27 (mean 0.5, std 1, 1024²), l.32–35, l.59–63'),
  },
  {
    name: 'isnet-anime',
    file: 'isnet-anime.onnx',
    url: `${REMBG}/isnet-anime.onnx`,
    approxBytes: 176 * MB,
    pin: { algorithm: 'md5', hex: '6f184e756bb3bd901c8849220a83e38e' },
    licence: 'Apache-2.0 (github.com/SkyTNT/anime-segmentation)',
    preset: 'isnet',
    // rembg's DisSession for anime: ImageNet mean, std 1.
    contract: asRembg('isnet', { normalization: { mean: IMAGENET_MEAN, std: [1, 1, 1], range: '0-1' } }),
    version: 'rembg v0.0.0 release',
    checkedAgainst: rembgAt('dis_anime.py', 'l.31 (ImageNet mean, std 1, 1024²), l.36–39, l.61–65'),
  },
  {
    name: 'bria-rmbg',
    file: 'bria-rmbg-2.0.onnx',
    url: `${REMBG}/bria-rmbg-2.0.onnx`,
    approxBytes: 1024 * MB,
    pin: { algorithm: 'sha256', hex: '5b486f08200f513f460da46dd701db5fbb47d79b4be4b708a19444bcd4e79958' },
    licence: 'CC-BY-NC-4.0 (BRIA RMBG-2.0: non-commercial use only; commercial use needs an agreement with BRIA)',
    licenceGate: 'CC-BY-NC-4.0',
    licenceUrl: 'https://huggingface.co/briaai/RMBG-2.0',
    preset: 'birefnet',
    // rembg's BriaRmBgSession: ImageNet mean/std, 1024², no sigmoid (the export ends in one), min-max.
    contract: asRembg('birefnet', {
      normalization: { mean: IMAGENET_MEAN, std: IMAGENET_STD, range: '0-1' },
      activation: 'none',
    }),
    version: 'RMBG-2.0',
    checkedAgainst: rembgAt('bria_rmbg.py', 'l.31–33 (ImageNet, 1024²), l.36–41 (min-max), l.63–67 (URL, sha256)'),
  },
];

export const CATALOGUE_ENV = 'RMBG_MODEL_CATALOGUE';

let replaced: { path: string; models: CatalogueModel[] } | undefined;

/** The catalogue: the list above, or the JSON array in the file RMBG_MODEL_CATALOGUE names. */
export function catalogue(env: NodeJS.ProcessEnv = process.env): readonly CatalogueModel[] {
  const path = env[CATALOGUE_ENV];
  if (!path) return CATALOGUE;
  if (replaced?.path !== path) {
    try {
      replaced = { path, models: JSON.parse(readFileSync(path, 'utf8')) as CatalogueModel[] };
    } catch (error) {
      throw new RmbgError('usage_error', `${CATALOGUE_ENV}=${path}: cannot read it: ${(error as Error).message}`);
    }
    if (!Array.isArray(replaced.models))
      throw new RmbgError('usage_error', `${CATALOGUE_ENV}=${path}: not a JSON array of models`);
    replaced.models.forEach((model, index) => {
      const problem = entryProblem(model);
      if (problem === undefined) return;
      const which = typeof model?.name === 'string' ? `'${model.name}'` : `entry ${index + 1}`;
      replaced = undefined;
      throw new RmbgError('usage_error', `${CATALOGUE_ENV}=${path}: ${which}: ${problem}`);
    });
  }
  return replaced.models;
}

const HEX_DIGITS = { md5: 32, sha256: 64 } as const;
const isNumbers = (value: unknown, length: number): boolean =>
  Array.isArray(value) && value.length === length && value.every((n) => typeof n === 'number' && Number.isFinite(n));

/** What is wrong with an entry of a replacing catalogue, or undefined. Its name and file become file names in the
 * models folder and under --from DIR, so they are held to `models add`'s names: never a path. */
function entryProblem(model: CatalogueModel): string | undefined {
  if (typeof model !== 'object' || model === null) return 'not an object';
  if (typeof model.name !== 'string' || !USER_MODEL_NAME.test(model.name))
    return `name must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit (no path)`;
  if (typeof model.file !== 'string' || !USER_MODEL_NAME.test(model.file))
    return `file must be a file name of letters, digits, '.', '_' or '-' (no path)`;
  if (typeof model.url !== 'string' || !/^https?:\/\//i.test(model.url)) return 'url must be an http(s) URL';
  const pin = model.pin as Partial<CatalogueModel['pin']> | undefined;
  if (
    typeof pin?.hex !== 'string' ||
    (pin.algorithm !== 'md5' && pin.algorithm !== 'sha256') ||
    !new RegExp(`^[0-9a-f]{${HEX_DIGITS[pin.algorithm]}}$`, 'i').test(pin.hex)
  )
    return 'pin must be { "algorithm": "md5" | "sha256", "hex": the hash in hex }';
  if (typeof model.approxBytes !== 'number' || !(model.approxBytes > 0)) return 'approxBytes must be a size in bytes';
  for (const field of ['licence', 'version'] as const)
    if (typeof model[field] !== 'string' || model[field] === '') return `${field} must be a string`;
  if (!PRESET_NAMES.includes(model.preset)) return `preset must be one of ${PRESET_NAMES.join(', ')}`;
  const contract = model.contract as Partial<ModelContract> | undefined;
  if (
    !isNumbers(contract?.input?.shape, 4) ||
    !isNumbers(contract?.normalization?.mean, 3) ||
    !isNumbers(contract?.normalization?.std, 3)
  )
    return 'contract must give input.shape [1, 3, H, W] and normalization.mean and .std (3 numbers each)';
  return undefined;
}

export const catalogueModel = (name: string): CatalogueModel | undefined => catalogue().find((m) => m.name === name);

/** The command that pulls a model, as error messages and the docs give it. */
export const pullCommand = (model: CatalogueModel): string =>
  `rmbg models pull ${model.name}${model.licenceGate ? ` --accept-licence ${model.licenceGate}` : ''}`;

/** What pulling a model costs and binds you to, as the messages before a pull say it: "about 224 MB, MIT". */
export const pullTerms = (model: CatalogueModel): string =>
  `about ${Math.round(model.approxBytes / 1e6)} MB, ${model.licence}`;
