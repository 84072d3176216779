// rembg's post-processing, which catalogue models ask for with `stretch: 'min-max'`: each mask mapped onto 0..1 by
// its own min and max, `(pred - mi) / (ma - mi)` in rembg/sessions/*.py.

import { describe, expect, it } from 'vitest';
import { stretchToUnit } from '../../../../src/engine/model/model-session.js';

describe('stretchToUnit', () => {
  it('maps the min to 0, the max to 1 and the rest linearly between', () => {
    const plane = new Float32Array([0.2, 0.6, 0.4, 0.3]);
    stretchToUnit(plane);
    expect([...plane].map((v) => Number(v.toFixed(6)))).toEqual([0, 1, 0.5, 0.25]);
  });

  it('stretches logits after the sigmoid as well as values outside 0..1', () => {
    const plane = new Float32Array([-3, 5, 1]);
    stretchToUnit(plane);
    expect([...plane]).toEqual([0, 1, 0.5]);
  });

  it('leaves a flat mask as it is, where rembg would divide by zero', () => {
    const plane = new Float32Array([0.7, 0.7, 0.7]);
    stretchToUnit(plane);
    expect([...plane].map((v) => Number(v.toFixed(6)))).toEqual([0.7, 0.7, 0.7]);
  });
});
