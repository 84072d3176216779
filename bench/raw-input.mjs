// A camera RAW's two ways in (engine/raw/decode-raw.ts): the camera's embedded full-size JPEG (`--raw preview`)
// against LibRaw's WebAssembly development (`--raw develop`), each in a fresh process so its peak memory is its own:
// wall time and peak RSS (the pixel worker's WebAssembly heap included) against the engine's budget for one image of
// that size (engine/runtime/memory-budget.ts peakBytesOf). The RAWs are DNGs made by bench/lib/raw-files.mjs (an
// uncompressed 16-bit Bayer mosaic and a full-size JPEG preview), or the RAW files given. Needs dist/ (npm run build).
//
// Usage: node bench/raw-input.mjs [--mp=24,45] [--repeat=2] [FILE.CR2 ...]
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, median } from './lib/inputs.mjs';
import { table } from './lib/markdown.mjs';

const dist = (path) => pathToFileURL(join(ROOT, 'dist', path)).href;
const arg = (name, fallback) => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found ? found.slice(found.indexOf('=') + 1) : fallback;
};

// A child: one RAW read one way, its time and the process's peak RSS as a JSON line.
const child = arg('child', undefined);
if (child) {
  const file = process.argv.at(-1);
  const [{ decodeRaw }, { rawKindOf }] = await Promise.all([
    import(dist('engine/raw/decode-raw.js')),
    import(dist('engine/raw/raw-kind.js')),
  ]);
  const raw = readFileSync(file);
  const started = performance.now();
  const photo = await decodeRaw(raw, rawKindOf(raw), child);
  const ms = performance.now() - started;
  const maxRss = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(`${JSON.stringify({ ms, maxRss, width: photo.width, height: photo.height, way: photo.way })}\n`);
  process.exit(0);
}

const { peakBytesOf } = await import(dist('engine/runtime/memory-budget.js'));
const repeat = Number(arg('repeat', '2'));
const work = join(ROOT, 'bench/.work/raw-input');
mkdirSync(work, { recursive: true });
const files = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (files.length === 0) {
  const { dngFile, rawPicture } = await import('./lib/raw-files.mjs');
  for (const mp of arg('mp', '24,45').split(',').map(Number)) {
    const width = Math.round(Math.sqrt((mp * 1e6 * 3) / 2) / 2) * 2; // 3:2, even sides (the Bayer pattern)
    const height = Math.round(width / 1.5 / 2) * 2;
    const file = join(work, `synthetic-${mp}mp.dng`);
    writeFileSync(file, dngFile(await rawPicture(1, width, height)));
    files.push(file);
  }
}

const MiB = (bytes) => (bytes / 2 ** 20).toFixed(0);
const rows = [];
for (const file of files) {
  const runs = { preview: [], develop: [] };
  for (let pass = 0; pass < repeat; pass++) {
    for (const way of ['preview', 'develop']) {
      const out = execFileSync(process.execPath, [join(ROOT, 'bench/raw-input.mjs'), `--child=${way}`, file], {
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      });
      runs[way].push(JSON.parse(out.trim().split('\n').at(-1)));
    }
  }
  for (const way of ['preview', 'develop']) {
    const last = runs[way].at(-1);
    const pixels = last.width * last.height;
    rows.push([
      file.split('/').at(-1),
      way,
      `${last.width}×${last.height}`,
      last.way,
      (median(runs[way].map((r) => r.ms)) / 1000).toFixed(2),
      MiB(Math.max(...runs[way].map((r) => r.maxRss))),
      MiB(peakBytesOf(pixels)),
    ]);
  }
}
const result = table(
  ['RAW', '--raw', 'pixels out', 'way used', 'median s', 'peak RSS MiB', 'engine budget per image MiB'],
  rows,
);
process.stdout.write(`${result}\n`);
writeFileSync(join(work, 'last-run.md'), `${result}\n`);
