// Whether WebGPU works here, asked of a child process so its stderr noise and adapter choice stay out of this one.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { builtModule } from '../../platform/built-module.js';
import {
  gpuErrorText,
  isSoftwareAdapter,
  loaderAdapters,
  softwareDriversHidden,
  userEnvironment,
  type GpuEnvironment,
} from './gpu-environment.js';

/** The loader's own INFO/DEBUG lines that VK_LOADER_DEBUG=driver asks for. */
const LOADER_DEBUG_LINE = /^(?:(?:INFO|DEBUG) +\| +)?DRIVER: /;

const ENTRY = fileURLToPath(builtModule('engine/gpu/gpu-probe-entry.js'));

export interface GpuProbe {
  ok: boolean;
  /** The adapters the Vulkan loader offered WebGPU, by the names their drivers report ("llvmpipe (LLVM 15.0.6, 256
   * bits)"); empty where it does not say (no adapter, or not Vulkan: macOS, Windows). */
  adapters: string[];
  /** Whether every adapter offered runs on the CPU (lavapipe, SwiftShader, WARP): WebGPU "works" but is no GPU. */
  software: boolean;
  /** Why not, in onnxruntime's words. */
  error?: string;
  /** What the Vulkan loader and Dawn printed meanwhile (warnings, the adapters they rejected). */
  log: string[];
}

/** Whether this onnxruntime-node build has WebGPU at all (1.30's linux-arm64 binding has none): without it there
 * is nothing to probe. */
export async function bindingHasWebGpu(): Promise<boolean> {
  const ort = await import('onnxruntime-node');
  return ort.listSupportedBackends().some((backend) => backend.name === 'webgpu');
}

/** The probe's time limit: a child stuck in a driver call is killed (SIGKILL: one stuck there may ignore SIGTERM). */
export const PROBE_LIMIT_MS = 60_000;

export interface ProbeOptions {
  /** What the machine offers, when the caller has read it already (gpu-environment.ts). */
  environment?: GpuEnvironment;
  env?: NodeJS.ProcessEnv;
  limitMs?: number;
  /** The child's script; tests give one that hangs. */
  entry?: string;
}

export function probeGpu(software: 'allowed' | 'hidden', options: ProbeOptions = {}): Promise<GpuProbe> {
  const { environment, env = userEnvironment(), limitMs = PROBE_LIMIT_MS, entry = ENTRY } = options;
  const childEnv = {
    ...(software === 'hidden' ? { ...env, ...softwareDriversHidden(env, environment) } : env),
    // The loader then lists the adapters it found by the names their drivers report (gpu-environment.ts).
    VK_LOADER_DEBUG: env.VK_LOADER_DEBUG ? `${env.VK_LOADER_DEBUG},driver` : 'driver',
  };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [entry], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, limitMs);
    const settle = (failure: string | undefined) => {
      clearTimeout(timer);
      const lines = stderr.split('\n').map((line) => line.trimEnd());
      const adapters = loaderAdapters(lines);
      const seen = { adapters, software: adapters.length > 0 && adapters.every(isSoftwareAdapter) };
      // What the loader said because it was asked (above) is not news; its warnings and errors are.
      const log = lines.filter((line) => line.trim() !== '' && !LOADER_DEBUG_LINE.test(line));
      try {
        const answer = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as { ok: boolean; error?: string };
        resolve({
          ok: answer.ok,
          ...(answer.error !== undefined && { error: gpuErrorText(answer.error) }),
          ...seen,
          log,
        });
      } catch {
        resolve({ ok: false, error: failure ?? 'the probe gave no answer', ...seen, log });
      }
    };
    child.once('error', (error) => settle(`the probe could not start: ${error.message}`));
    child.once('close', (code, signal) =>
      settle(
        timedOut
          ? `the probe timed out after ${limitMs / 1000} s (killed: a driver call that never returned)`
          : `the probe stopped (${signal ? `signal ${signal}` : `exit code ${code}`})`,
      ),
    );
  });
}
