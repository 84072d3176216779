// The bench's folder of photos, made at run time in bench/.work/photos (git-ignored): the four samples as they
// are, plus larger real-photo-like JPEGs derived from them (upscaled, sensor-like grain, re-encoded at q90), so
// the set spans 640×480 … 4000×3000 without committing megabytes of pictures.
import { copyFile, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { ROOT } from './inputs.mjs';

const SAMPLES = ['astronaut.png', 'chelsea.png', 'coffee.png', 'rocket.jpg'];

/** [source sample, width, height]; --quick keeps only the largest. */
const DERIVED = [
  ['coffee.png', 640, 480],
  ['astronaut.png', 1280, 960],
  ['chelsea.png', 1920, 1080],
  ['coffee.png', 3000, 2000],
  ['rocket.jpg', 4000, 3000],
];

async function derive(source, width, height, target) {
  // Upscaling alone gives smooth pictures that decode and compress unrealistically fast; grain restores a
  // photo's entropy (soft-light keeps the tones).
  const grain = await sharp({
    create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 18 } },
  })
    .png()
    .toBuffer();
  await sharp(join(ROOT, 'samples', source))
    .resize(width, height, { fit: 'cover', kernel: 'lanczos3' })
    .sharpen()
    .composite([{ input: grain, blend: 'soft-light' }])
    .jpeg({ quality: 90 })
    .toFile(target);
}

/** Makes (or reuses) the photo folder and lists its files, smallest first. `copies` > 1 puts each photo in the
 * folder that many times (a longer run, for a device that takes the set in a second). */
export async function preparePhotos(workDir, { quick = false, copies = 1 } = {}) {
  const dir = join(workDir, `${quick ? 'photos-quick' : 'photos'}${copies > 1 ? `-x${copies}` : ''}`);
  await mkdir(dir, { recursive: true });
  const wanted = [];
  for (const sample of SAMPLES) {
    const target = join(dir, sample);
    wanted.push(target);
    await copyFile(join(ROOT, 'samples', sample), target);
  }
  for (const [source, width, height] of quick ? DERIVED.slice(-1) : DERIVED) {
    const target = join(dir, `${source.replace(/\.\w+$/, '')}-${width}x${height}.jpg`);
    wanted.push(target);
    if (!(await stat(target).catch(() => null))) await derive(source, width, height, target);
  }
  for (const original of wanted.splice(0)) {
    for (let copy = 1; copy <= copies; copy++) {
      const target = copy === 1 ? original : original.replace(/(\.\w+)$/, `-copy${copy}$1`);
      if (copy > 1) await copyFile(original, target);
      wanted.push(target);
    }
  }
  // Leftovers from an older set would be picked up by the folder run.
  for (const name of await readdir(dir))
    if (!wanted.includes(join(dir, name))) await rm(join(dir, name), { recursive: true, force: true });
  const sized = await Promise.all(wanted.map(async (file) => ({ file, ...(await sharp(file).metadata()) })));
  return {
    dir,
    photos: sized
      .sort((a, b) => a.width * a.height - b.width * b.height)
      .map(({ file, width, height, size }) => ({ file, width, height, bytes: size })),
  };
}

/** One 50 MP JPEG (8640×5760, the API's pixel limit), kept apart from the folder: the memory probe's largest case. */
export async function prepareLargePhoto(workDir) {
  const target = join(workDir, 'rocket-8640x5760.jpg');
  if (!(await stat(target).catch(() => null))) await derive('rocket.jpg', 8640, 5760, target);
  return { file: target, width: 8640, height: 5760 };
}
