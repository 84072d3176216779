// The peer (@imgly/background-removal-node) for comparison: installed on first use into bench/peers (its own
// package.json and lockfile; never a dependency of rmbg) and driven in a child process over IPC.
import { execFileSync, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './inputs.mjs';

const PEERS = join(ROOT, 'bench', 'peers');
const PACKAGE = join(PEERS, 'node_modules', '@imgly', 'background-removal-node', 'package.json');

/** Installs the peer if needed; returns null when ready, or why it is unavailable. */
export function ensurePeerInstalled() {
  if (existsSync(PACKAGE)) return null;
  console.log('installing the peer: npm --prefix bench/peers ci (first run only)');
  try {
    execFileSync('npm', ['--prefix', PEERS, 'ci', '--no-audit', '--no-fund'], {
      stdio: 'inherit',
      // onnxruntime-node 1.17's postinstall downloads CUDA libraries from outside the npm registry; its CPU build
      // ships in the tarball. The first variable is what 1.17 reads, the second what later versions read.
      env: { ...process.env, npm_config_onnxruntime_node_install_cuda: 'skip', ONNXRUNTIME_NODE_INSTALL: 'skip' },
    });
  } catch (error) {
    return `npm --prefix bench/peers ci failed: ${error.message}`;
  }
  return existsSync(PACKAGE)
    ? null
    : 'npm --prefix bench/peers ci finished but @imgly/background-removal-node is not installed';
}

export async function startPeer() {
  const child = fork(join(PEERS, 'imgly-worker.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = new Map();
  let nextId = 1;
  let ready;
  const readyPromise = new Promise((resolve, reject) => {
    ready = resolve;
    child.once('exit', (code) => reject(new Error(`peer process exited (code ${code}) before it was ready`)));
  });
  child.on('message', (message) => {
    if (message.ready) return ready();
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) waiter?.reject(new Error(message.error));
    else waiter?.resolve(message);
  });
  child.on('exit', (code) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`peer process exited (code ${code})`));
    pending.clear();
  });
  const call = (message) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ id, ...message });
    });
  await readyPromise;
  return {
    warmup: (file) => call({ warmup: file }),
    remove: (file) => call({ file }),
    folder: (files) => call({ files }),
    /** Ends the process; resolves to its peak RSS. */
    close: async () => (await call({ exit: true })).maxRssBytes,
  };
}
