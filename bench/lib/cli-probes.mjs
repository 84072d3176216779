// The real commands as a user runs them, in fresh processes: start-up cost of `rmbg remove photo --local`, and
// `rmbg serve`'s first request against later ones and its peak RSS under 8 concurrent requests.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './inputs.mjs';
import { listeningUrl } from './serve-url.mjs';
import { servingPid } from './serving-process.mjs';

const CLI = join(ROOT, 'bin', 'rmbg.js');
const run = promisify(execFile);

/**
 * `rmbg remove FILE --local` in a fresh process (a fresh output folder each time), `runs` times: ms from spawn to
 * its first result (the file's JSON line, printed once the output is in place) and to its exit (after which the
 * kernel has freed the process's memory: ~0.1 s for the ~1 GB an inference touched). `cli`: another checkout's
 * bin/rmbg.js to time instead (bench/startup.mjs compares two).
 */
export async function removeTimes(file, runs, model, cli = CLI, extraArgs = []) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const out = await mkdtemp(join(tmpdir(), 'rmbg-bench-start-'));
    const started = performance.now();
    const child = spawn(
      process.execPath,
      [cli, 'remove', file, '--local', '-o', out, '--json', ...(model ? ['--model', model] : []), ...extraArgs],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    let firstResult;
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (firstResult === undefined && stdout.includes('"status":"done"')) firstResult = performance.now() - started;
    });
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const code = await new Promise((resolve) => child.on('close', resolve));
    const exit = performance.now() - started;
    await rm(out, { recursive: true, force: true });
    if (code !== 0 || firstResult === undefined)
      throw new Error(`rmbg remove ${file} --local exited with ${code} and no result: ${stderr || stdout}`);
    times.push({ firstResult, exit });
  }
  return times;
}

/** Peak RSS of a process (VmHWM), bytes. */
async function peakRss(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
}

/**
 * `rmbg serve` on a free port with its own data directory and a key holding `credits`, `flags` added. `post(image,
 * fields)` sends one image and resolves once its answer is read (throwing on any status but 200); `stop()` ends the
 * server and removes its data directory.
 */
export async function startServe({ credits, flags, stderr = 'ignore' }) {
  const dataDir = await mkdtemp(join(tmpdir(), 'rmbg-bench-serve-'));
  const { stdout } = await run(
    process.execPath,
    [CLI, 'keys', 'create', '--json', '--credits', String(credits), '--data-dir', dataDir],
    { cwd: ROOT },
  );
  const { key } = JSON.parse(stdout);
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--data-dir', dataDir, ...flags], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', stderr],
  });
  const stop = async () => {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    await rm(dataDir, { recursive: true, force: true });
  };
  let url;
  try {
    url = await listeningUrl(child);
  } catch (error) {
    await stop();
    throw error;
  }
  const post = async (image, fields = {}) => {
    const form = new FormData();
    form.append('image_file', new Blob([image]), 'photo');
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    const response = await fetch(`${url}/v1.0/removebg`, { method: 'POST', body: form, headers: { 'X-API-Key': key } });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`serve answered ${response.status}`);
  };
  return { child, post, stop };
}

/**
 * Starts `rmbg serve` on a free port with its own data dir; times `sequential` requests of `small` one after
 * another (the first against the rest), then sends `concurrent` requests of `large` at once and reads the
 * server's peak RSS.
 */
export async function serveProbe({ small, large, sequential = 4, concurrent = 8, model }) {
  const started = performance.now();
  const server = await startServe({
    credits: 1000,
    flags: [
      '--max-queue',
      String(concurrent),
      '--max-in-flight-per-key',
      String(concurrent),
      ...(model ? ['--model', model] : []),
    ],
    stderr: 'inherit',
  });
  try {
    const readyMs = performance.now() - started;
    const timedPost = async (image) => {
      const t = performance.now();
      await server.post(image, { size: 'full' });
      return performance.now() - t;
    };
    const smallBytes = await readFile(small);
    const requests = [];
    for (let i = 0; i < sequential; i++) requests.push(await timedPost(smallBytes));
    const largeBytes = await readFile(large);
    const t = performance.now();
    await Promise.all(Array.from({ length: concurrent }, () => timedPost(largeBytes)));
    const concurrentMs = performance.now() - t;
    return { readyMs, requests, concurrentMs, maxRss: await peakRss(servingPid(server.child.pid)) };
  } finally {
    await server.stop();
  }
}
