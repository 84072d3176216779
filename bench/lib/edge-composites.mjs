// Composites with known foreground colours, for the clean-edges measure (issue #45): a sample photo's pixels taken
// as the foreground's true colours F under its cutout's mask (the true alpha), laid over another photo. A cutout of
// the composite is then held to the truth over white and over black, in the band of soft pixels. Shared by
// bench/edge-colour.mjs and test/e2e/clean-edges.test.ts.
import sharp from 'sharp';

/** The composite's RGB bytes: F·α + B·(1 − α), B `backgroundFile` covering the foreground's size (`flop`: mirrored,
 * so one photo gives two backgrounds). */
export async function compositeOver({ pixels, alpha, width, height }, backgroundFile, flop = false) {
  const background = await sharp(backgroundFile)
    .flop(flop)
    .resize(width, height, { fit: 'cover' })
    .removeAlpha()
    .raw()
    .toBuffer();
  const out = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    const a = alpha[i] / 255;
    for (let k = 0; k < 3; k++) out[i * 3 + k] = Math.round(pixels[i * 3 + k] * a + background[i * 3 + k] * (1 - a));
  }
  return out;
}

/** Mean absolute error in levels (0..255) of `cutout` (RGB pixels and alpha) against `truth` (the same), each laid
 * over each colour of `over` (RGB; black and white unless given), in the band where either alpha is soft
 * (0 < α < 255); and the band's size in pixels. */
export function edgeError(
  truth,
  cutout,
  over = [
    [0, 0, 0],
    [255, 255, 255],
  ],
) {
  let sum = 0;
  let band = 0;
  for (let i = 0; i < truth.alpha.length; i++) {
    const ta = truth.alpha[i];
    const ca = cutout.alpha[i];
    if ((ta === 0 || ta === 255) && (ca === 0 || ca === 255)) continue;
    band++;
    for (const colour of over) {
      for (let k = 0; k < 3; k++) {
        const wanted = (truth.pixels[i * 3 + k] * ta + colour[k] * (255 - ta)) / 255;
        const got = (cutout.pixels[i * 3 + k] * ca + colour[k] * (255 - ca)) / 255;
        sum += Math.abs(wanted - got);
      }
    }
  }
  return { levels: band ? sum / (band * 3 * over.length) : 0, band };
}

/** RGB bytes and alpha of an RGBA cutout (a PNG's decoded pixels). */
export function splitRgba(rgba) {
  const count = rgba.length / 4;
  const pixels = Buffer.alloc(count * 3);
  const alpha = Buffer.alloc(count);
  for (let i = 0; i < count; i++) {
    pixels[i * 3] = rgba[i * 4];
    pixels[i * 3 + 1] = rgba[i * 4 + 1];
    pixels[i * 3 + 2] = rgba[i * 4 + 2];
    alpha[i] = rgba[i * 4 + 3];
  }
  return { pixels, alpha };
}
