// The malloc set-ups the malloc benches compare (pixel-malloc.mjs, memory-soak.mjs): glibc's dynamic thresholds,
// the fixed ones bin/malloc-tuning.js gives rmbg, and with --preload=PATH another allocator loaded in glibc's place
// (LD_PRELOAD; for example Debian's libjemalloc2: /usr/lib/x86_64-linux-gnu/libjemalloc.so.2).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT } from './inputs.mjs';

const { MALLOC_TUNABLES, RESTARTED } = createRequire(import.meta.url)(join(ROOT, 'bin', 'malloc-tuning.js'));
/** Each run keeps the allocator it is given: rmbg does not restart itself (or serve in a child) with its own. */
const AS_GIVEN = { [RESTARTED]: '1' };

/** Each set-up's short name, its label for a table, and the environment a run gets. */
export function mallocVariants(argv = process.argv) {
  const variants = [
    { name: 'dynamic', label: "glibc's dynamic thresholds", env: { ...AS_GIVEN, GLIBC_TUNABLES: '' } },
    {
      name: 'fixed',
      label: `fixed (GLIBC_TUNABLES=${MALLOC_TUNABLES})`,
      env: { ...AS_GIVEN, GLIBC_TUNABLES: MALLOC_TUNABLES },
    },
  ];
  const preload = argv.find((arg) => arg.startsWith('--preload='))?.slice('--preload='.length);
  if (preload) {
    const library = preload.split('/').pop();
    variants.push({
      name: library,
      label: `${library} (LD_PRELOAD)`,
      env: { ...AS_GIVEN, GLIBC_TUNABLES: '', LD_PRELOAD: preload },
    });
  }
  return variants;
}
