// What a model expects and gives (input size, normalisation, activation): all the pipeline needs to run an ONNX file.

import { RmbgError } from '../../api/errors.js';

export interface ModelContract {
  /** Input tensor; `name` absent: the model's first input. Shape is [1, 3, height, width]. */
  input: { name?: string; shape: [number, number, number, number] };
  /** Output tensor read as the mask (its first H×W plane); absent: the model's first output. */
  output?: string;
  /** value = (pixel × scale − mean) / std per channel (R, G, B); scale 1/255 for '0-1', 1 for '0-255' (default). */
  normalization: { mean: [number, number, number]; std: [number, number, number]; range?: PixelRange };
  /** 'sigmoid': the output is logits; default 'none' (probabilities, clamped to 0..1). */
  activation?: Activation;
  /** After the activation: 'min-max' stretches each mask to 0..1 by its own min and max (rembg does so for every
   * model it downloads); default 'none'. */
  stretch?: Stretch;
}

export type PixelRange = '0-1' | '0-255';
export type Activation = 'none' | 'sigmoid';
export type Stretch = 'none' | 'min-max';

const IMAGENET = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] } as {
  mean: [number, number, number];
  std: [number, number, number];
};
const HALF = { mean: [0.5, 0.5, 0.5], std: [1, 1, 1] } as {
  mean: [number, number, number];
  std: [number, number, number];
};
const square = (size: number): [number, number, number, number] => [1, 3, size, size];

export const PRESETS = {
  /** ISNet (DIS) exports, e.g. rembg's isnet-general-use: 1024², mean 0.5, std 1, sigmoid inside the graph. */
  isnet: { input: { shape: square(1024) }, normalization: { ...HALF, range: '0-1' }, activation: 'none' },
  /** BiRefNet exports: 1024², ImageNet mean/std, the output is logits. */
  birefnet: { input: { shape: square(1024) }, normalization: { ...IMAGENET, range: '0-1' }, activation: 'sigmoid' },
  /** U²-Net / U²-Netp / silueta: 320², ImageNet mean/std, probabilities. */
  u2net: { input: { shape: square(320) }, normalization: { ...IMAGENET, range: '0-1' }, activation: 'none' },
  /** BRIA RMBG-1.4: 1024², mean 0.5, std 1, probabilities. */
  bria: { input: { shape: square(1024) }, normalization: { ...HALF, range: '0-1' }, activation: 'none' },
} as const satisfies Record<string, ModelContract>;

export type PresetName = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];

/** The factor that maps a 0–255 pixel onto the contract's scale. */
export const pixelScale = (contract: ModelContract): number => (contract.normalization.range === '0-1' ? 1 / 255 : 1);

/** The model's input plane (its shape is [1, 3, height, width]). */
export function inputSizeOf(contract: ModelContract): { width: number; height: number } {
  const [, , height, width] = contract.input.shape;
  return { width, height };
}

/** What a user may say about a model: a preset, and/or explicit values (strings as typed) that override it. */
export interface ContractFlags {
  preset?: string;
  inputSize?: string;
  mean?: string;
  std?: string;
  range?: string;
  activation?: string;
  input?: string;
  output?: string;
}

const usage = (message: string): RmbgError => new RmbgError('usage_error', message);

function triple(flag: string, text: string): [number, number, number] {
  const values = text.split(',').map((part) => Number(part.trim()));
  if (values.length === 1 && Number.isFinite(values[0]))
    return [values[0] as number, values[0] as number, values[0] as number];
  if (values.length !== 3 || !values.every(Number.isFinite))
    throw usage(`${flag} takes one number or three, comma-separated (R,G,B), e.g. 0.485,0.456,0.406; got '${text}'`);
  return values as [number, number, number];
}

function size(text: string): [number, number, number, number] {
  const match = /^(\d{1,5})(?:x(\d{1,5}))?$/i.exec(text.trim());
  const width = Number(match?.[1]);
  const height = Number(match?.[2] ?? match?.[1]);
  if (!match || width < 8 || height < 8 || width > 4096 || height > 4096)
    throw usage(`--input-size takes N or WxH, each 8–4096 pixels, e.g. 1024 or 1024x768; got '${text}'`);
  return [1, 3, height, width];
}

function oneOf<T extends string>(flag: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text))
    throw usage(`${flag} must be one of ${allowed.join(', ')}; got '${text}'`);
  return text as T;
}

/** The contract a user asked for: a preset fills what the flags leave out; without one, size, mean, std are needed. */
export function contractFromFlags(flags: ContractFlags): ModelContract & { preset?: PresetName } {
  const preset = flags.preset === undefined ? undefined : oneOf('--preset', flags.preset, PRESET_NAMES);
  const base: Partial<ModelContract> = preset ? (structuredClone(PRESETS[preset]) as ModelContract) : {};
  const missing = (['inputSize', 'mean', 'std'] as const).filter((name) => !preset && flags[name] === undefined);
  if (missing.length) {
    const names = missing.map((name) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ');
    throw usage(
      `give --preset ${PRESET_NAMES.join('|')}, or the model's contract: ${names} (and --range, --activation if not 0-1 and none)`,
    );
  }
  const shape =
    flags.inputSize !== undefined ? size(flags.inputSize) : (base.input?.shape as [number, number, number, number]);
  const normalization = {
    mean:
      flags.mean !== undefined ? triple('--mean', flags.mean) : (base.normalization?.mean as [number, number, number]),
    std: flags.std !== undefined ? triple('--std', flags.std) : (base.normalization?.std as [number, number, number]),
    range:
      flags.range !== undefined
        ? oneOf('--range', flags.range, ['0-1', '0-255'] as const)
        : (base.normalization?.range ?? '0-1'),
  };
  if (normalization.std.some((value) => value === 0)) throw usage('--std must not be 0 for any channel');
  const activation =
    flags.activation !== undefined
      ? oneOf('--activation', flags.activation, ['none', 'sigmoid'] as const)
      : (base.activation ?? 'none');
  return {
    ...(preset ? { preset } : {}),
    input: { ...(flags.input ? { name: flags.input } : {}), shape },
    ...(flags.output ? { output: flags.output } : {}),
    normalization,
    activation,
  };
}
