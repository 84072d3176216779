// The confidence formula (src/engine/output/mask-confidence.ts) on masks built to sit on either side of the issue's
// rule: "more than 0.5 ambiguous pixels per foreground pixel, or a foreground under 0.5 % of the image".

import { describe, expect, it } from 'vitest';
import { confidenceOf, maskConfidence, SUSPECT_BELOW } from '../../../../src/engine/output/mask-confidence.js';

/** A mask of `total` pixels: `foreground` at 1, `ambiguous` at 0.5 (counted as foreground too), the rest 0. */
function mask(total: number, foreground: number, ambiguous = 0, ambiguousValue = 0.5): Float32Array {
  const plane = new Float32Array(total);
  plane.fill(1, 0, foreground);
  plane.fill(ambiguousValue, foreground, foreground + ambiguous);
  return plane;
}

describe('maskConfidence', () => {
  it('counts ambiguous pixels (0.1 < alpha < 0.9) per foreground pixel (alpha ≥ 0.5), and the foreground share', () => {
    // Doubles, so that 0.1 and 0.9 are exactly the bounds (in a Float32Array 0.1 rounds up, 0.9 down).
    const plane = Float64Array.from([0, 0.1, 0.11, 0.49, 0.5, 0.89, 0.9, 1, 1, 1]);
    const stats = maskConfidence(plane);
    // foreground: 0.5, 0.89, 0.9, 1, 1, 1 → 6; ambiguous: 0.11, 0.49, 0.5, 0.89 → 4
    expect(stats.foregroundShare).toBeCloseTo(0.6);
    expect(stats.ambiguity).toBeCloseTo(4 / 6);
  });

  it('gives 1 to a crisp mask and 0 to an empty one', () => {
    expect(maskConfidence(mask(10_000, 3_000)).confidence).toBe(1);
    expect(maskConfidence(mask(10_000, 0)).confidence).toBe(0);
    expect(maskConfidence(new Float32Array(0)).confidence).toBe(0);
    // All ambiguous but under 0.5: no foreground at all.
    expect(maskConfidence(mask(10_000, 0, 5_000, 0.3)).confidence).toBe(0);
  });

  it('is 0.5 on the rule boundary, and below it exactly where the rule flags', () => {
    // 1,000 foreground pixels of 100,000 (1 %), with ambiguous pixels at 0.5 counted in the foreground.
    const total = 100_000;
    const withAmbiguity = (ratio: number) => {
      // ambiguous / (solid + ambiguous) = ratio, for a foreground of 1,000 pixels
      const ambiguous = Math.round(1_000 * ratio);
      return maskConfidence(mask(total, 1_000 - ambiguous, ambiguous)).confidence;
    };
    expect(withAmbiguity(0.5)).toBe(SUSPECT_BELOW);
    expect(withAmbiguity(0.45)).toBeGreaterThan(SUSPECT_BELOW);
    expect(withAmbiguity(0.55)).toBeLessThan(SUSPECT_BELOW);
    // A crisp foreground of 0.5 % of the image, then a little more and a little less.
    expect(maskConfidence(mask(total, 500)).confidence).toBe(SUSPECT_BELOW);
    expect(maskConfidence(mask(total, 560)).confidence).toBeGreaterThan(SUSPECT_BELOW);
    expect(maskConfidence(mask(total, 440)).confidence).toBeLessThan(SUSPECT_BELOW);
  });

  it('falls as the ambiguity grows and as the foreground shrinks, continuously', () => {
    const byAmbiguity = [0, 0.1, 0.25, 0.5, 1, 2].map((ratio) => confidenceOf(ratio, 0.3));
    expect(byAmbiguity).toEqual([...byAmbiguity].sort((a, b) => b - a));
    expect(new Set(byAmbiguity).size).toBe(byAmbiguity.length);
    expect(byAmbiguity).toEqual([1, 0.962, 0.8, 0.5, 0.2, 0.059]);
    const byShare = [0.5, 0.05, 0.01, 0.005, 0.001, 0].map((share) => confidenceOf(0, share));
    expect(byShare).toEqual([1, 0.99, 0.8, 0.5, 0.038, 0]);
    // The worse of the two decides.
    expect(confidenceOf(1, 0.001)).toBe(confidenceOf(0, 0.001));
    expect(confidenceOf(1, 0.5)).toBe(confidenceOf(1, 1));
  });

  it('takes values outside 0..1 (a model without activation) as clamped', () => {
    const raw = Float32Array.from([-3, -0.2, 1.4, 7, 0.5]);
    const clamped = Float32Array.from([0, 0, 1, 1, 0.5]);
    expect(maskConfidence(raw)).toEqual(maskConfidence(clamped));
  });
});
