#!/usr/bin/env node
// How long `rmbg serve` makes GET /healthz wait while it removes the background of one 4000×3000 photo:
// health checks one after another (each sent when the previous one answered) from the moment the upload is
// sent until its answer; prints their count, median and worst latency, and the removal's time. Runs the CLI
// of ROOT (default: this checkout), so an older build can be measured beside this one in the same load.
// Usage: node bench/healthz-during-inference.mjs [ROOT]
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

const root = resolve(process.argv[2] ?? join(fileURLToPath(import.meta.url), '..', '..'));
const cli = join(root, 'bin', 'rmbg.js');
const dataDir = mkdtempSync(join(tmpdir(), 'rmbg-bench-healthz-'));
const { key } = JSON.parse(
  execFileSync(process.execPath, [cli, 'keys', 'create', '--json', '--credits', '5', '--data-dir', dataDir]).toString(),
);
const server = spawn(process.execPath, [cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise((done) => {
  let out = '';
  server.stdout.on('data', (chunk) => {
    out += chunk;
    const match = /listening on (http:\/\/\S+)/.exec(out);
    if (match) done(match[1]);
  });
});

const photo = await sharp({
  create: {
    width: 4000,
    height: 3000,
    channels: 3,
    background: '#6a8caf',
    noise: { type: 'gaussian', mean: 120, sigma: 40 },
  },
})
  .jpeg({ quality: 85 })
  .toBuffer();
const form = new FormData();
form.append('image_file', new Blob([photo]), 'photo.jpg');
form.append('size', 'full');
let answered = false;
const started = performance.now();
const removal = fetch(`${url}/v1.0/removebg`, { method: 'POST', body: form, headers: { 'X-API-Key': key } }).then(
  async (response) => {
    await response.arrayBuffer();
    answered = true;
    return { status: response.status, ms: performance.now() - started };
  },
);
const latencies = [];
while (!answered) {
  const t = performance.now();
  await (await fetch(`${url}/healthz`)).arrayBuffer();
  latencies.push(performance.now() - t);
}
const { status, ms } = await removal;
server.kill('SIGTERM');
await new Promise((done) => server.once('exit', done));
rmSync(dataDir, { recursive: true, force: true });

latencies.sort((a, b) => a - b);
const median = latencies[Math.floor(latencies.length / 2)];
console.log(
  JSON.stringify({
    root,
    removalStatus: status,
    removalMs: Math.round(ms),
    healthChecks: latencies.length,
    medianMs: +median.toFixed(1),
    worstMs: Math.round(latencies.at(-1)),
  }),
);
