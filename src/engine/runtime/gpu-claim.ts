// The process's GPU belongs to one copy of rmbg at a time. Two WebGPU sessions working at once crash the process
// (SIGSEGV), and gpu-queue.ts orders only its own copy's work: worker threads that each import rmbg, or two
// versions of it in one dependency tree, each have their own. A module variable, or a key on globalThis, is per
// copy (each thread is its own isolate); a local socket name bound by this process is not: every thread and copy
// sees the one bind, the OS makes it atomic, and it goes away with the process, even one that crashed.

import { readlinkSync, rmSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { messageOf } from '../../api/errors.js';

/** Why a copy that asks finds the GPU taken. */
export const GPU_HELD_ELSEWHERE =
  'another copy of rmbg in this process (another worker thread, or a second copy of the package) holds the GPU, ' +
  'and two WebGPU users in one process crash it';

/** The process's name for its GPU claim: the same in every thread and copy of this process, and no other's. */
export function claimAddress(pid = process.pid, platform = process.platform): string {
  if (platform === 'win32') return `\\\\?\\pipe\\rmbg-gpu-${pid}`;
  if (platform === 'linux') {
    // Abstract sockets are per network namespace, which containers of one pod share with pids that repeat
    // (each one's pid 1): the pid namespace tells them apart.
    let namespace = '';
    try {
      namespace = readlinkSync('/proc/self/ns/pid');
    } catch {}
    return `\0rmbg-gpu-${namespace}-${pid}`;
  }
  return join(tmpdir(), `rmbg-gpu-${pid}.sock`);
}

/** This copy's users of the claim (GPU sessions and placements under way), the bind they share, and its undoing. */
let users = 0;
let bound: Promise<Server> | undefined;
let unbinding: Promise<void> = Promise.resolve();

function listen(address: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.once('error', reject);
    server.listen(address, () => {
      server.unref(); // the claim never keeps the process alive
      resolve(server);
    });
  });
}

/** Whether a socket file is answered (held by a running process) or stale (left by one that ended: macOS). */
function answered(address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(address);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function bind(address: string): Promise<Server> {
  await unbinding; // this copy's own last claim, still closing
  try {
    return await listen(address);
  } catch (error) {
    const fileSocket = !address.startsWith('\0') && !address.startsWith('\\\\');
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || !fileSocket || (await answered(address))) throw error;
    rmSync(address, { force: true }); // a file left by an earlier process with this pid
    return listen(address);
  }
}

/**
 * One more user of the GPU in this copy: undefined once the process's GPU is this copy's, else why not (another
 * copy holds it). Each claim that succeeded is given back once with releaseGpu().
 */
export async function claimGpu(address = claimAddress()): Promise<string | undefined> {
  users++;
  bound ??= bind(address);
  const claim = bound;
  try {
    await claim;
    return undefined;
  } catch (error) {
    users--;
    if (bound === claim) bound = undefined;
    return (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
      ? GPU_HELD_ELSEWHERE
      : `the process's GPU claim failed: ${messageOf(error)}`;
  }
}

/** One user fewer; the last one frees the process's GPU for other copies. */
export function releaseGpu(): void {
  if (users === 0) return;
  if (--users > 0 || !bound) return;
  const claim = bound;
  bound = undefined;
  unbinding = claim.then(
    (server) => new Promise<void>((resolve) => server.close(() => resolve())),
    () => undefined,
  );
}
