// Soaks of the real CLI, its resident memory read as it goes: `rmbg serve` under requests of mixed photos, sizes and
// formats (one in ten a truncated file, 400), and `rmbg remove` over a folder. Shared by bench/memory-soak.mjs and
// test/e2e/memory-soak.test.ts and memory-soak-serve.test.ts.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { basename, join } from 'node:path';
import { ROOT } from './inputs.mjs';
import { listeningUrl } from './serve-url.mjs';
import { servingPid } from './serving-process.mjs';

const SIZES = ['preview', 'small', 'regular', 'medium', 'hd', 'full'];
const FORMATS = ['png', 'jpg', 'webp'];

/** A process's resident memory in bytes (Linux /proc). */
export function rssOf(pid) {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}

/** The i-th request of a soak: photo, size and format cycle at strides that meet every pairing; every tenth is
 * truncated (the server answers 400 corrupt_image). */
export function soakRequest(photos, i) {
  return {
    file: photos[i % photos.length],
    size: SIZES[i % SIZES.length],
    format: FORMATS[Math.floor(i / SIZES.length) % FORMATS.length],
    truncated: i % 10 === 9,
  };
}

/**
 * Starts `rmbg serve` of `checkout` with `node` (its own data folder; `env` added, e.g. RMBG_MODEL; `flags` added,
 * e.g. --store), sends `requests` requests `concurrency` at a time and resolves with the server's RSS after each
 * round, read when none is in flight (so no photo's own buffers count), and the statuses seen. Any other status than
 * 200 (400 for a truncated file) rejects. The server is stopped before it settles.
 */
export async function soakServe({
  checkout = ROOT,
  node = process.execPath,
  dataDir,
  photos,
  requests,
  concurrency = 2,
  env = {},
  flags = [],
}) {
  const cli = join(checkout, 'bin', 'rmbg.js');
  const childEnv = { ...process.env, ...env };
  const common = ['--data-dir', dataDir, ...flags];
  const created = execFileSync(node, [cli, 'keys', 'create', '--json', '--credits', String(requests), ...common], {
    env: childEnv,
  });
  const { key } = JSON.parse(created.toString());
  const child = spawn(
    node,
    // A rate limit above the soak's pace: it measures memory, not the limiter.
    [cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--rate-limit', String(requests), ...common],
    { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv },
  );
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const bytes = new Map(photos.map((file) => [file, readFileSync(file)]));
  const send = async (url, i) => {
    const { file, size, format, truncated } = soakRequest(photos, i);
    const whole = bytes.get(file);
    const form = new FormData();
    form.set('size', size);
    form.set('format', format);
    form.set('image_file', new Blob([truncated ? whole.subarray(0, whole.length >> 1) : whole]), basename(file));
    const response = await fetch(`${url}/v1.0/removebg`, { method: 'POST', headers: { 'x-api-key': key }, body: form });
    await response.arrayBuffer();
    const expected = truncated ? 400 : 200;
    if (response.status !== expected)
      throw new Error(`request ${i} (${basename(file)}, ${size}, ${format}): ${response.status}, not ${expected}`);
    return response.status;
  };
  try {
    const url = await listeningUrl(child, () => stderr);
    const server = servingPid(child.pid);
    const rss = [];
    const statuses = {};
    for (let first = 0; first < requests; first += concurrency) {
      const round = Array.from({ length: Math.min(concurrency, requests - first) }, (_, k) => send(url, first + k));
      for (const status of await Promise.all(round)) statuses[status] = (statuses[status] ?? 0) + 1;
      rss.push({ requests: first + round.length, rss: rssOf(server) });
    }
    return { rss, statuses };
  } catch (error) {
    throw new Error(`${error.message}\nthe server said: ${stderr}`);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
  }
}

/**
 * `rmbg remove DIR --local --json` of `checkout` with `node` (`env` added, e.g. RMBG_MODEL), its RSS read at each
 * photo's JSON line; resolves with the samples and the summary line. A failed photo or exit rejects.
 */
export async function soakRemove({ checkout = ROOT, node = process.execPath, dir, outDir, env = {}, flags = [] }) {
  const cli = join(checkout, 'bin', 'rmbg.js');
  const child = spawn(node, [cli, 'remove', dir, '--local', '--json', '-o', outDir, ...flags], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = once(child, 'exit');
  const rss = [];
  let summary;
  for await (const line of createInterface({ input: child.stdout })) {
    const row = JSON.parse(line);
    if (row.summary) summary = row;
    else rss.push({ requests: rss.length + 1, rss: rssOf(child.pid) });
  }
  const [code] = await exited;
  if (code !== 0 || !summary || summary.failed > 0)
    throw new Error(`rmbg remove exited ${code}: ${JSON.stringify(summary)}\n${stderr}`);
  return { rss, summary };
}

/**
 * `removeBackground()` of `checkout`'s library in a loop, in a process of its own started by `node` with `env`
 * (a program's own: rmbg cannot restart it), the photos, sizes and formats of the serve soak without the truncated
 * ones; resolves with its RSS after each photo, once collected.
 */
export async function soakLibrary({ checkout = ROOT, node = process.execPath, photos, count, model, env = {} }) {
  const program = `
    import { readFileSync } from 'node:fs';
    import { close, removeBackground } from ${JSON.stringify(join(checkout, 'dist', 'index.js'))};
    import { soakRequest } from ${JSON.stringify(new URL(import.meta.url).pathname)};
    const photos = ${JSON.stringify(photos)};
    const rss = [];
    for (let i = 0; rss.length < ${count}; i++) {
      const { file, size, format, truncated } = soakRequest(photos, i);
      if (truncated) continue;
      await removeBackground(readFileSync(file), { model: ${JSON.stringify(model)}, size, format });
      globalThis.gc(); // what the loop keeps, not what awaits the collector
      rss.push({ requests: rss.length + 1, rss: process.memoryUsage().rss });
    }
    await close();
    console.log(JSON.stringify(rss));`;
  const child = spawn(node, ['--expose-gc', '--input-type=module', '-e', program], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`the library's loop exited ${code}: ${stderr}`);
  return { rss: JSON.parse(stdout) };
}
