// What this machine offers WebGPU, read from files only (no GPU API is touched, so nothing prints and nothing
// is slow): GPU device nodes and Vulkan drivers on Linux, and how to fix a missing GPU on each OS. The engine
// reads it to decide whether `auto` tries the GPU at all; error messages and `rmbg doctor` show it.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/** Vulkan drivers that run on the CPU (lavapipe, SwiftShader): far slower than onnxruntime's CPU provider. */
const SOFTWARE_DRIVER = /lvp|lavapipe|swiftshader|llvmpipe/i;
/** VK_LOADER_DRIVERS_DISABLE globs that hide them from the Vulkan loader (matched against manifest file names). */
export const SOFTWARE_DRIVER_GLOBS = '*lvp*,*swiftshader*';
const VENDORS: Record<string, string> = { '0x10de': 'NVIDIA', '0x1002': 'AMD', '0x8086': 'Intel', '0x1af4': 'virtio', '0x15ad': 'VMware' };
const ICD_DIRS = ['/etc/vulkan/icd.d', '/usr/local/share/vulkan/icd.d', '/usr/share/vulkan/icd.d'];
const LOADER_PATHS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu', '/lib64'].map((dir) => join(dir, 'libvulkan.so.1'));

export interface VulkanDriver {
  /** The manifest's file name, e.g. lvp_icd.json. */
  manifest: string;
  software: boolean;
}

export interface GpuEnvironment {
  platform: NodeJS.Platform;
  /** GPU device nodes (Linux): "/dev/dri/renderD128 (NVIDIA)", "/dev/nvidia0". Empty: no GPU this process can reach. */
  devices: string[];
  /** Vulkan drivers installed (Linux). */
  drivers: VulkanDriver[];
  /** Whether the Vulkan loader (libvulkan.so.1), which WebGPU needs on Linux, is in a standard folder. */
  loader: boolean;
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function vendorOf(renderNode: string): string {
  try {
    const id = readFileSync(`/sys/class/drm/${renderNode}/device/vendor`, 'utf8').trim();
    return VENDORS[id] ?? id;
  } catch {
    return 'unknown vendor';
  }
}

/** The manifests the Vulkan loader reads: VK_DRIVER_FILES / VK_ICD_FILENAMES when set, else the standard folders. */
function driverManifests(env: NodeJS.ProcessEnv): string[] {
  const chosen = env['VK_DRIVER_FILES'] || env['VK_ICD_FILENAMES'];
  if (chosen) return chosen.split(':').filter((file) => file && existsSync(file));
  return ICD_DIRS.flatMap((dir) => list(dir).filter((name) => name.endsWith('.json')).map((name) => join(dir, name)));
}

export function gpuEnvironment(env: NodeJS.ProcessEnv = process.env): GpuEnvironment {
  if (process.platform !== 'linux') return { platform: process.platform, devices: [], drivers: [], loader: true };
  const render = list('/dev/dri').filter((name) => name.startsWith('renderD')).map((name) => `/dev/dri/${name} (${vendorOf(name)})`);
  const nvidia = list('/dev').filter((name) => /^nvidia\d+$/.test(name)).map((name) => `/dev/${name}`);
  const wsl = existsSync('/dev/dxg') ? ['/dev/dxg (WSL)'] : [];
  const drivers = driverManifests(env).map((file) => ({ manifest: basename(file), software: SOFTWARE_DRIVER.test(basename(file)) }));
  return { platform: 'linux', devices: [...render, ...nvidia, ...wsl], drivers, loader: LOADER_PATHS.some((path) => existsSync(path)) };
}

/**
 * Whether `auto` should try the GPU. On Linux only with a GPU device node: without one, the only adapters
 * Vulkan could offer are software ones, which `auto` never uses, and trying would cost time and stderr noise.
 */
export function mayHaveHardwareGpu(environment: GpuEnvironment): boolean {
  return environment.platform !== 'linux' || environment.devices.length > 0;
}

/** What was seen, for a message: "GPU devices: none; Vulkan drivers: lvp_icd.json (software), intel_icd.json". */
export function describeEnvironment(environment: GpuEnvironment): string {
  if (environment.platform !== 'linux') return `platform ${environment.platform}`;
  const drivers = environment.drivers.map((driver) => `${driver.manifest}${driver.software ? ' (software)' : ''}`);
  return [
    `GPU devices: ${environment.devices.join(', ') || 'none'}`,
    `Vulkan loader (libvulkan.so.1): ${environment.loader ? 'found' : 'not found'}`,
    `Vulkan drivers: ${drivers.join(', ') || 'none'}`,
  ].join('; ');
}

/** ORT's "…/webgpu_context.cc:136 … was false. Failed to get a WebGPU adapter: No supported adapters" → its last sentence. */
export function gpuErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const ort = /\S+\.(?:cc|h|cpp):\d+ [^\n]*?(?:was false\.|\]) *([^\n]+)/.exec(message);
  return (ort?.[1] ?? message.split('\n')[0] ?? message).trim();
}

/** How to give WebGPU a GPU on this OS. */
export function gpuFixHint(platform: NodeJS.Platform = process.platform): string {
  if (platform === 'darwin') return 'WebGPU runs on Metal: it needs macOS 13 or later on a Mac with a Metal GPU';
  if (platform === 'win32') return 'WebGPU runs on Direct3D 12: install the GPU vendor\'s current driver';
  return (
    "WebGPU runs on Vulkan: install the Vulkan loader (Debian/Ubuntu: apt-get install libvulkan1) and the GPU's Vulkan driver " +
    '(NVIDIA: the driver\'s Vulkan part, e.g. libnvidia-gl-<version>; AMD and Intel: mesa-vulkan-drivers), and make sure this user can open /dev/dri/renderD* or /dev/nvidia*'
  );
}

/**
 * Runs `work` with the software Vulkan drivers hidden from the loader, which reads the variable when WebGPU
 * creates its instance (the process's first GPU session); the caller's own value is kept and restored.
 */
export async function withSoftwareAdaptersHidden<T>(work: () => Promise<T>): Promise<T> {
  const name = 'VK_LOADER_DRIVERS_DISABLE';
  const before = process.env[name];
  process.env[name] = before ? `${before},${SOFTWARE_DRIVER_GLOBS}` : SOFTWARE_DRIVER_GLOBS;
  try {
    return await work();
  } finally {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  }
}
