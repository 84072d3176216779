// The user models folder is shared by every rmbg on the machine: two pulls of one model would write one `.part`
// (a resume needs its fixed name), and two commands that change the registry would each drop the other's entry.
// So a pull holds a lock per model for as long as it runs, and a registry change holds the registry's lock for its
// read, change and write. Both are pid locks (src/platform/pid-lock.ts): one left by a killed process is taken over.

import { join } from 'node:path';
import { RmbgError } from '../../api/errors.js';
import { acquirePidLock } from '../../platform/pid-lock.js';

/** How often a waiting process looks at a lock again. */
const RETRY_MS = 100;
/** How long a registry change waits for another (each takes milliseconds; longer means a stuck process). */
const REGISTRY_WAIT_MS = 30_000;

/** Takes the lock, or returns who holds it. */
function tryLock(lockPath: string): { release: () => void } | { holder: string } {
  let holder = '';
  try {
    return { release: acquirePidLock(lockPath, (described) => (holder = described)) };
  } catch (error) {
    if (error instanceof RmbgError && error.code === 'usage_error' && holder) return { holder };
    throw error;
  }
}

/** Holds the pull lock of model NAME in `dir`, waiting while another process pulls it (`onWait` hears who, once).
 * Resolves with the function that releases it. */
export async function lockModelPull(dir: string, name: string, onWait: (holder: string) => void): Promise<() => void> {
  let told = false;
  for (;;) {
    const attempt = tryLock(join(dir, `${name}.onnx.pull.lock`));
    if ('release' in attempt) return attempt.release;
    if (!told) onWait(attempt.holder);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Runs `change` (a read, change and write of the registry of `dir`) holding the registry's lock; synchronous, as the
 * callers are: a wait blocks this thread, for milliseconds (REGISTRY_WAIT_MS at most). */
export function withRegistryLock<T>(dir: string, change: () => T): T {
  const lockPath = join(dir, 'models.json.lock');
  const deadline = Date.now() + REGISTRY_WAIT_MS;
  for (;;) {
    const attempt = tryLock(lockPath);
    if ('release' in attempt) {
      try {
        return change();
      } finally {
        attempt.release();
      }
    }
    if (Date.now() > deadline)
      throw new RmbgError('io_error', `the user model registry in ${dir} stays locked by ${attempt.holder}`);
    Atomics.wait(pause, 0, 0, RETRY_MS / 10);
  }
}
