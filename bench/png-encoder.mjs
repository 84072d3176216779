#!/usr/bin/env node
// PNG encoders, size vs time, on a real cutout (RGBA, colour zeroed under alpha 0, as the engine's compose
// makes it): rmbg's banded encoder (src/engine/output/png-encode.ts, needs a build) against libvips' at several
// settings. Input: any rmbg PNG result; default: the 4000×3000 photo's result from the last bench run.
// Usage: node bench/png-encoder.mjs [result.png] [runs=3]
import { join } from 'node:path';
import sharp from 'sharp';
import { encodePng } from '../dist/engine/output/png-encode.js';
import { ROOT, median } from './lib/inputs.mjs';
import { table, ms } from './lib/markdown.mjs';

const file = process.argv[2] ?? join(ROOT, 'bench', '.work', 'out', 'c2', 'rocket-4000x3000.png');
const runs = Number(process.argv[3] ?? 3);
const { data, info } = await sharp(file).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
const variants = [
  ...[1, 2, 3, 4, 6, 9].map((level) => ({ compressionLevel: level, adaptiveFiltering: false })),
  { compressionLevel: 3, adaptiveFiltering: true },
  { compressionLevel: 6, adaptiveFiltering: true },
];
const rows = [];
for (const options of variants) {
  const times = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    bytes = (
      await sharp(data, { raw: { width: info.width, height: info.height, channels: 4 } })
        .png(options)
        .toBuffer()
    ).length;
    times.push(performance.now() - t);
  }
  rows.push([
    JSON.stringify(options),
    ms(median(times)),
    times.map((t) => ms(t)).join(', '),
    bytes.toLocaleString('en-US'),
  ]);
}
{
  const times = [];
  let bytes = 0;
  const rowBytes = info.width * 4;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    bytes = (
      await encodePng(info.width, info.height, (top, count) => ({
        pixels: data.subarray(top * rowBytes, (top + count) * rowBytes),
        channels: 4,
      }))
    ).length;
    times.push(performance.now() - t);
  }
  rows.push([
    'rmbg encodePng (Up filter, zlib run-length strategy, bands deflated on the thread pool)',
    ms(median(times)),
    times.map((t) => ms(t)).join(', '),
    bytes.toLocaleString('en-US'),
  ]);
}
console.log(`${info.width}×${info.height} RGBA from ${file}\n`);
console.log(table(['png options', 'median ms', 'runs ms', 'bytes'], rows));
