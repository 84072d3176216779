// What this machine offers WebGPU, read from files only, so reading it prints nothing and costs no time.

import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { basename, join } from 'node:path';

/** Vulkan drivers that run on the CPU (lavapipe, SwiftShader): far slower than onnxruntime's CPU provider. */
const SOFTWARE_DRIVER = /lvp|lavapipe|swiftshader|llvmpipe/i;
/** VK_LOADER_DRIVERS_DISABLE globs that hide them from the Vulkan loader (matched against manifest file names). */
const SOFTWARE_DRIVER_GLOBS = '*lvp*,*swiftshader*';
/** Loaders before 1.3.234 ignore VK_LOADER_DRIVERS_DISABLE: they are given the other drivers' manifests instead. */
const DRIVERS_DISABLE_SINCE = [1, 3, 234];
const VENDORS: Record<string, string> = {
  '0x10de': 'NVIDIA',
  '0x1002': 'AMD',
  '0x8086': 'Intel',
  '0x1af4': 'virtio',
  '0x15ad': 'VMware',
};
const ICD_DIRS = ['/etc/vulkan/icd.d', '/usr/local/share/vulkan/icd.d', '/usr/share/vulkan/icd.d'];
const LOADER_PATHS = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/lib',
  '/lib/x86_64-linux-gnu',
  '/lib64',
].map((dir) => join(dir, 'libvulkan.so.1'));

export interface VulkanDriver {
  /** The manifest's file name, e.g. lvp_icd.json. */
  manifest: string;
  path: string;
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
  /** Its version from the file it links to (libvulkan.so.1.3.239), when it says. */
  loaderVersion?: number[];
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
  const chosen = env.VK_DRIVER_FILES || env.VK_ICD_FILENAMES;
  if (chosen) return chosen.split(':').filter((file) => file && existsSync(file));
  return ICD_DIRS.flatMap((dir) =>
    list(dir)
      .filter((name) => name.endsWith('.json'))
      .map((name) => join(dir, name)),
  );
}

export function gpuEnvironment(env: NodeJS.ProcessEnv = process.env): GpuEnvironment {
  if (process.platform !== 'linux') return { platform: process.platform, devices: [], drivers: [], loader: true };
  const render = list('/dev/dri')
    .filter((name) => name.startsWith('renderD'))
    .map((name) => `/dev/dri/${name} (${vendorOf(name)})`);
  const nvidia = list('/dev')
    .filter((name) => /^nvidia\d+$/.test(name))
    .map((name) => `/dev/${name}`);
  const wsl = existsSync('/dev/dxg') ? ['/dev/dxg (WSL)'] : [];
  const drivers = driverManifests(env).map((file) => ({
    manifest: basename(file),
    path: file,
    software: SOFTWARE_DRIVER.test(basename(file)),
  }));
  const loader = LOADER_PATHS.find((path) => existsSync(path));
  const version = loader ? /\.so\.(\d+)\.(\d+)\.(\d+)$/.exec(realpathSync(loader)) : null;
  return {
    platform: 'linux',
    devices: [...render, ...nvidia, ...wsl],
    drivers,
    loader: loader !== undefined,
    ...(version && { loaderVersion: version.slice(1).map(Number) }),
  };
}

/** Whether `auto` tries the GPU: on Linux only with a GPU device node, without which Vulkan offers only software. */
export function mayHaveHardwareGpu(environment: GpuEnvironment): boolean {
  return environment.platform !== 'linux' || environment.devices.length > 0;
}

/** What was seen, for a message: "GPU devices: none; Vulkan drivers: lvp_icd.json (software), intel_icd.json". */
export function describeEnvironment(environment: GpuEnvironment): string {
  if (environment.platform !== 'linux') return `platform ${environment.platform}`;
  const drivers = environment.drivers.map((driver) => `${driver.manifest}${driver.software ? ' (software)' : ''}`);
  return [
    `GPU devices: ${environment.devices.join(', ') || 'none'}`,
    `Vulkan loader (libvulkan.so.1): ${environment.loader ? (environment.loaderVersion ? environment.loaderVersion.join('.') : 'found') : 'not found'}`,
    `Vulkan drivers: ${drivers.join(', ') || 'none'}`,
  ].join('; ');
}

/** The last sentence of ORT's "…/webgpu_context.cc:136 … was false. Failed to get a WebGPU adapter: …". */
export function gpuErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const ort = /\S+\.(?:cc|h|cpp):\d+ [^\n]*?(?:was false\.|\]) *([^\n]+)/.exec(message);
  return (ort?.[1] ?? message.split('\n')[0] ?? message).trim();
}

/** How to give WebGPU a GPU on this OS. */
export function gpuFixHint(platform: NodeJS.Platform = process.platform): string {
  if (platform === 'darwin') return 'WebGPU runs on Metal: it needs macOS 13 or later on a Mac with a Metal GPU';
  if (platform === 'win32') return "WebGPU runs on Direct3D 12: install the GPU vendor's current driver";
  return (
    "WebGPU runs on Vulkan: install the Vulkan loader (Debian/Ubuntu: apt-get install libvulkan1) and the GPU's Vulkan driver " +
    "(NVIDIA: the driver's Vulkan part, e.g. libnvidia-gl-<version>; AMD and Intel: mesa-vulkan-drivers), and make sure this user can open /dev/dri/renderD* or /dev/nvidia*"
  );
}

/** Whether version `a` comes before `b`. */
function before(a: number[], b: number[]): boolean {
  for (let i = 0; i < b.length; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  return false;
}

/** The variables that hide the software drivers from the Vulkan loader, on top of what `env` already sets. */
export function softwareDriversHidden(
  env: NodeJS.ProcessEnv,
  environment: GpuEnvironment = gpuEnvironment(env),
): Record<string, string> {
  const own = env.VK_LOADER_DRIVERS_DISABLE;
  const hidden: Record<string, string> = {
    VK_LOADER_DRIVERS_DISABLE: own ? `${own},${SOFTWARE_DRIVER_GLOBS}` : SOFTWARE_DRIVER_GLOBS,
  };
  if (environment.loaderVersion && before(environment.loaderVersion, DRIVERS_DISABLE_SINCE)) {
    // A path that does not exist when there is no other driver: the loader then finds none, as wanted.
    hidden.VK_ICD_FILENAMES =
      environment.drivers
        .filter((driver) => !driver.software)
        .map((driver) => driver.path)
        .join(':') || '/nonexistent/rmbg-no-hardware-driver.json';
  }
  return hidden;
}

/** While loads that hide the software drivers run: how many, and the values those variables had before. */
let hiding = 0;
let userValues: Record<string, string | undefined> = {};

/** Runs `work` with the software Vulkan drivers hidden; overlapping loads share one change, undone by the last. */
export async function withSoftwareAdaptersHidden<T>(work: () => Promise<T>, environment?: GpuEnvironment): Promise<T> {
  if (hiding++ === 0) {
    const hidden = softwareDriversHidden(process.env, environment);
    userValues = Object.fromEntries(Object.keys(hidden).map((name) => [name, process.env[name]]));
    Object.assign(process.env, hidden);
  }
  try {
    return await work();
  } finally {
    if (--hiding === 0) for (const [name, value] of Object.entries(userValues)) setOrDelete(process.env, name, value);
  }
}

/** This process's environment as the user set it: without what withSoftwareAdaptersHidden added meanwhile. */
export function userEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (hiding > 0) for (const [name, value] of Object.entries(userValues)) setOrDelete(env, name, value);
  return env;
}

function setOrDelete(env: NodeJS.ProcessEnv, name: string, value: string | undefined): void {
  if (value === undefined) delete env[name];
  else env[name] = value;
}
