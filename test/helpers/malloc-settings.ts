// bin/malloc-tuning.js as the tests see it: the thresholds rmbg sets, and a user's environment that sets none of
// glibc's malloc, so what a run shows is rmbg's own doing.

import { createRequire } from 'node:module';
import { cliEnv } from './cli.js';

export const { MALLOC_TUNABLES, mallocThresholdsFixed } = createRequire(import.meta.url)(
  '../../bin/malloc-tuning.js',
) as { MALLOC_TUNABLES: string; mallocThresholdsFixed(env: Record<string, string>): boolean };

/** cliEnv() less every glibc malloc setting this process has, with `env` over it. */
export function envWithoutMallocSettings(env: Record<string, string> = {}): Record<string, string> {
  return cliEnv({
    env: {
      GLIBC_TUNABLES: undefined,
      MALLOC_MMAP_THRESHOLD_: undefined,
      MALLOC_TRIM_THRESHOLD_: undefined,
      MALLOC_ARENA_MAX: undefined,
      ...env,
    },
  });
}
