// npm run bench -- --formats: a folder of 12 MP HEIC photos (what an iPhone saves) against the same photos as JPEG
// q92, each cut out by the real folder batch on this computer (`rmbg remove DIR --local`: the CLI's options, its
// default concurrency), so the HEIC decode (libheif in WebAssembly, then sRGB) overlaps the model as in use. The
// folders alternate, pass by pass, so both see the machine's load of the moment. Writes
// bench/.work/formats-last-run.md. Needs dist/ (npm run build) and heif-enc (test/install-debian-deps.sh).
//
// Usage: node bench/run.mjs --formats [--photos=N] [--repeat=N] [--model=NAME]
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import { ROOT, median } from './lib/inputs.mjs';
import { ms, ratio, table } from './lib/markdown.mjs';
import { loadRmbg } from './lib/rmbg.mjs';

const arg = (name, fallback) => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found ? found.slice(found.indexOf('=') + 1) : fallback;
};
const count = Number(arg('photos', 4));
const repeat = Number(arg('repeat', 1));
const model = arg('model', undefined);
const WORK = join(ROOT, 'bench', '.work', 'formats');
const [WIDTH, HEIGHT] = [4032, 3024]; // an iPhone's 12 MP
const SAMPLES = ['rocket.jpg', 'chelsea.png', 'coffee.png', 'astronaut.png'];
const log = (line) => console.log(`[bench-formats ${new Date().toISOString().slice(11, 19)}] ${line}`);

/** A photo-like 12 MP picture from a sample (grain restores a photo's entropy), as JPEG q92 and as HEIC. */
async function preparePair(i) {
  const jpeg = join(WORK, 'jpg', `IMG_${1000 + i}.jpg`);
  const heic = join(WORK, 'heic', `IMG_${1000 + i}.heic`);
  if (await stat(heic).catch(() => null)) return;
  const grain = await sharp({
    create: {
      width: WIDTH,
      height: HEIGHT,
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: 14 },
    },
  })
    .png()
    .toBuffer();
  await sharp(join(ROOT, 'samples', SAMPLES[i % SAMPLES.length]))
    .resize(WIDTH, HEIGHT, { fit: 'cover' })
    .composite([{ input: grain, blend: 'soft-light' }])
    .jpeg({ quality: 92 })
    .withIccProfile('p3') // tagged Display P3 as a phone's photos are: both folders pay the conversion to sRGB
    .toFile(jpeg);
  // heif-enc's default quality (50) is about what a phone writes; the HEIC holds the same pixels and profile.
  execFileSync('heif-enc', ['-o', heic, jpeg], { stdio: 'pipe' });
}

await mkdir(join(WORK, 'jpg'), { recursive: true });
await mkdir(join(WORK, 'heic'), { recursive: true });
for (let i = 0; i < count; i++) await preparePair(i);
log(`${count} photos of ${WIDTH}x${HEIGHT} as JPEG q92 and as HEIC in ${WORK}`);

const rmbg = await loadRmbg();
const engine = await rmbg.createEngine({ model });
const concurrency = rmbg.defaultConcurrency;

// The HEIC decode alone (header, libheif, sRGB), one photo at a time: what the batch has to hide behind the model.
const { decodePhoto } = await import(pathToFileURL(join(ROOT, 'dist', 'engine', 'decode-input.js')).href);
const decodeMs = [];
for (let i = 0; i < count; i++) {
  const bytes = await readFile(join(WORK, 'heic', `IMG_${1000 + i}.heic`));
  const started = performance.now();
  await decodePhoto(bytes, 'heic');
  decodeMs.push(performance.now() - started);
}
log(`HEIC decode alone: median ${ms(median(decodeMs))} ms per photo`);

const seconds = { jpg: [], heic: [] };
for (let pass = 0; pass < repeat; pass++) {
  for (const format of pass % 2 === 0 ? ['jpg', 'heic'] : ['heic', 'jpg']) {
    const output = join(WORK, `out-${format}`);
    await rm(output, { recursive: true, force: true });
    const started = performance.now();
    const summary = await rmbg.runFolder(engine, join(WORK, format), output, concurrency);
    const elapsed = (performance.now() - started) / 1000;
    if (summary.done !== count) throw new Error(`${format}: ${summary.done} of ${count} done`);
    seconds[format].push(elapsed);
    log(
      `pass ${pass + 1} ${format}: ${count} photos in ${elapsed.toFixed(1)} s (${(count / elapsed).toFixed(3)} photos/s)`,
    );
  }
}
await engine.close();

const rate = (format) => count / median(seconds[format]);
const report = [
  `# HEIC against JPEG q92, 12 MP, on this computer`,
  '',
  `${new Date().toISOString()}; ${cpus()[0]?.model ?? 'CPU'}, ${availableParallelism()} threads; model ${engine.session.model.name}; concurrency ${concurrency}; ${count} photos, ${repeat} pass(es)`,
  '',
  table(
    ['folder', 'photos/s (median pass)', 'passes (s)'],
    [
      ['JPEG q92', rate('jpg').toFixed(3), seconds.jpg.map((s) => s.toFixed(1)).join(', ')],
      ['HEIC', rate('heic').toFixed(3), seconds.heic.map((s) => s.toFixed(1)).join(', ')],
    ],
  ),
  '',
  `HEIC / JPEG photos per second: **${ratio(rate('heic') / rate('jpg'))}** (goal ≥ 0.6×); the HEIC decode alone takes ${ms(median(decodeMs))} ms a photo.`,
  '',
].join('\n');
await writeFile(join(ROOT, 'bench', '.work', 'formats-last-run.md'), report);
console.log(`\n${report}`);
