// How far a cutout can be trusted, from its mask alone: one pass over the model's plane (0..1 floats at the model's
// size, before it is resized: a fixed cost per photo, whatever the photo's size, and the model's own uncertainty
// before any resampling blurs it).
//
// Measured on 60 photos with exact alpha (issue #36), the share of ambiguous pixels (alpha strictly between 0.1 and
// 0.9) per foreground pixel (alpha ≥ 0.5) ranks cutouts by their IoU (Spearman −0.72), and the rule "more than 0.5
// ambiguous per foreground pixel, or a foreground under 0.5 % of the image" catches most failures. Its continuous form:
//
//   d = max(ambiguity / 0.5, 0.005 / foregroundShare)      (d = 1 on the rule's boundary; an empty mask: d = ∞)
//   confidence = 1 / (1 + d²)                              (1 for a crisp mask, 0.5 on the boundary, → 0)
//
// so a confidence under 0.5 (the default --review-below) is exactly the rule's "suspect".

/** Alpha strictly between these is ambiguous (neither clearly background nor clearly foreground). */
const AMBIGUOUS_LOW = 0.1;
const AMBIGUOUS_HIGH = 0.9;
/** Alpha from this up counts as foreground. */
const FOREGROUND_FROM = 0.5;
/** The rule's boundaries: ambiguous pixels per foreground pixel, and the foreground's share of the image. */
export const SUSPECT_AMBIGUITY = 0.5;
export const SUSPECT_FOREGROUND_SHARE = 0.005;
/** The confidence on the rule's boundary: below it, a cutout is one the rule would flag. */
export const SUSPECT_BELOW = 0.5;

export interface MaskStatistics {
  /** Ambiguous pixels per foreground pixel (Infinity without foreground). */
  ambiguity: number;
  /** Foreground pixels over all pixels, 0..1. */
  foregroundShare: number;
  /** 0..1, rounded to 3 decimals. */
  confidence: number;
}

/** The statistics and confidence of a mask of 0..1 values (values outside are taken as clamped). */
export function maskConfidence(mask: ArrayLike<number>): MaskStatistics {
  let foreground = 0;
  let ambiguous = 0;
  // Counted without branches: a model's noisy plane would mispredict them (measured: 22 ms → 2 ms on 1024²).
  for (let i = 0; i < mask.length; i++) {
    const alpha = mask[i] as number;
    foreground += +(alpha >= FOREGROUND_FROM);
    ambiguous += +(alpha > AMBIGUOUS_LOW) & +(alpha < AMBIGUOUS_HIGH);
  }
  const foregroundShare = mask.length ? foreground / mask.length : 0;
  const ambiguity = foreground ? ambiguous / foreground : Number.POSITIVE_INFINITY;
  return { ambiguity, foregroundShare, confidence: confidenceOf(ambiguity, foregroundShare) };
}

/** The formula above: 1 / (1 + d²), d the larger of the two distances relative to the rule's boundaries. */
export function confidenceOf(ambiguity: number, foregroundShare: number): number {
  const d = Math.max(ambiguity / SUSPECT_AMBIGUITY, SUSPECT_FOREGROUND_SHARE / foregroundShare);
  if (!Number.isFinite(d)) return 0;
  return Math.round((1 / (1 + d * d)) * 1000) / 1000;
}

/** Whether a cutout is one to check: its confidence is under `below` (none, from a peer server: never flagged). */
export function isFlagged(confidence: number | undefined, below: number): boolean {
  return confidence !== undefined && confidence < below;
}
