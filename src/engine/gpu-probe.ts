// Whether WebGPU works here, asked of a child process so its stderr noise and adapter choice stay out of this one.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { gpuErrorText, softwareDriversHidden, userEnvironment, type GpuEnvironment } from './gpu-environment.js';

// Run from the TypeScript source (the tests), the entry is the built one in dist/, as for the inference worker.
const ENTRY = fileURLToPath(
  import.meta.url.endsWith('.ts')
    ? new URL('../../dist/engine/gpu-probe-entry.js', import.meta.url)
    : new URL('./gpu-probe-entry.js', import.meta.url),
);

export interface GpuProbe {
  ok: boolean;
  /** Why not, in onnxruntime's words. */
  error?: string;
  /** What the Vulkan loader and Dawn printed meanwhile (warnings, the adapters they rejected). */
  log: string[];
}

/** `environment`: what the machine offers, when the caller has read it already (gpu-environment.ts). */
export function probeGpu(
  software: 'allowed' | 'hidden',
  environment?: GpuEnvironment,
  env: NodeJS.ProcessEnv = userEnvironment(),
): Promise<GpuProbe> {
  const childEnv = software === 'hidden' ? { ...env, ...softwareDriversHidden(env, environment) } : env;
  return new Promise((resolve) => {
    execFile(process.execPath, [ENTRY], { env: childEnv, timeout: 60_000 }, (error, stdout, stderr) => {
      const log = stderr
        .split('\n')
        .map((line) => line.trimEnd())
        .filter((line) => line.trim() !== '');
      try {
        const answer = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as { ok: boolean; error?: string };
        resolve({ ok: answer.ok, ...(answer.error !== undefined && { error: gpuErrorText(answer.error) }), log });
      } catch {
        resolve({
          ok: false,
          error: error ? `the probe stopped: ${error.message.split('\n')[0]}` : 'the probe gave no answer',
          log,
        });
      }
    });
  });
}
