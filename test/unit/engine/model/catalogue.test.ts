// The catalogue against what rembg's sessions run each model with (danielgatis/rembg 684f8e9, rembg/sessions):
// the release URL, the hash's form, and the contract: BiRefNet 1024², ImageNet mean/std, sigmoid, min-max;
// U²-Net family 320², ImageNet, min-max; ISNet 1024², mean 0.5 (anime: ImageNet mean), std 1, min-max.

import { describe, expect, it } from 'vitest';
import { CATALOGUE, catalogue, pullCommand } from '../../../../src/engine/model/catalogue.js';
import { USER_MODEL_NAME } from '../../../../src/engine/model/user-models.js';

const IMAGENET = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], range: '0-1' };
const byName = (name: string) => CATALOGUE.find((m) => m.name === name);

describe('the model catalogue', () => {
  it("holds rembg's BiRefNet, U²-Net and ISNet models and BRIA RMBG-2.0, each name once and usable as --model", () => {
    const names = CATALOGUE.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining([
        ...['general', 'general-lite', 'portrait', 'dis', 'hrsod', 'massive'].map((v) => `birefnet-${v}`),
        ...['u2net', 'u2netp', 'u2net_human_seg', 'silueta', 'isnet-general-use', 'isnet-anime', 'bria-rmbg'],
      ]),
    );
    for (const name of names) expect(name).toMatch(USER_MODEL_NAME);
  });

  it("points each at rembg's release and pins a hash of the right length", () => {
    for (const model of CATALOGUE) {
      expect(model.url).toBe(`https://github.com/danielgatis/rembg/releases/download/v0.0.0/${model.file}`);
      expect(model.pin.hex).toMatch(model.pin.algorithm === 'md5' ? /^[0-9a-f]{32}$/ : /^[0-9a-f]{64}$/);
      expect(model.approxBytes).toBeGreaterThan(1e6);
    }
  });

  it("runs each with rembg's pre- and post-processing", () => {
    for (const model of CATALOGUE) {
      expect(model.contract.stretch, model.name).toBe('min-max');
      const [, , height, width] = model.contract.input.shape;
      if (model.name.startsWith('birefnet-'))
        expect(model.contract, model.name).toMatchObject({ normalization: IMAGENET, activation: 'sigmoid' });
      if (model.preset === 'u2net') {
        expect([width, height], model.name).toEqual([320, 320]);
        expect(model.contract, model.name).toMatchObject({ normalization: IMAGENET, activation: 'none' });
      } else expect([width, height], model.name).toEqual([1024, 1024]);
    }
    expect(byName('isnet-general-use')?.contract.normalization).toEqual({
      mean: [0.5, 0.5, 0.5],
      std: [1, 1, 1],
      range: '0-1',
    });
    expect(byName('isnet-anime')?.contract.normalization).toEqual({
      mean: IMAGENET.mean,
      std: [1, 1, 1],
      range: '0-1',
    });
    expect(byName('bria-rmbg')?.contract).toMatchObject({ normalization: IMAGENET, activation: 'none' });
  });

  it('gates only the non-commercial weights behind a licence acceptance, which the pull command names', () => {
    expect(CATALOGUE.filter((m) => m.licenceGate).map((m) => m.name)).toEqual(['bria-rmbg']);
    expect(pullCommand(byName('bria-rmbg') as (typeof CATALOGUE)[number])).toBe(
      'rmbg models pull bria-rmbg --accept-licence CC-BY-NC-4.0',
    );
    expect(pullCommand(byName('u2net') as (typeof CATALOGUE)[number])).toBe('rmbg models pull u2net');
  });

  it('is replaced only by the file RMBG_MODEL_CATALOGUE names, and a bad file is a usage error', () => {
    expect(catalogue({})).toBe(CATALOGUE);
    expect(() => catalogue({ RMBG_MODEL_CATALOGUE: '/nonexistent/catalogue.json' })).toThrow(
      expect.objectContaining({ code: 'usage_error' }),
    );
  });
});
