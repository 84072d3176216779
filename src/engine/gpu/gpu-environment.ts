// What this machine offers WebGPU, read from files only, so reading it prints nothing and costs no time.

import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { basename, join } from 'node:path';
import { messageOf } from '../../api/errors.js';

/** Vulkan drivers that run on the CPU (lavapipe, SwiftShader): far slower than onnxruntime's CPU provider. */
const SOFTWARE_DRIVER = /lvp|lavapipe|swiftshader|llvmpipe/i;
/** Adapters that run on the CPU, by the name their driver reports: Mesa's lavapipe ("llvmpipe (LLVM 15.0.6, 256
 * bits)"), SwiftShader ("SwiftShader Device (Subzero)"), Direct3D's WARP ("Microsoft Basic Render Driver"). */
const SOFTWARE_ADAPTER = /llvmpipe|lavapipe|softpipe|swiftshader|microsoft basic render driver|\bwarp\b/i;

export function isSoftwareAdapter(name: string): boolean {
  return SOFTWARE_ADAPTER.test(name);
}

/** The adapters in the Vulkan loader's VK_LOADER_DEBUG=driver output: the "Sorted order:" list, "[0] llvmpipe (…)". */
export function loaderAdapters(lines: string[]): string[] {
  const names = new Set<string>();
  let sorted = false;
  for (const line of lines) {
    if (/DRIVER: +Sorted order:/.test(line)) sorted = true;
    else if (sorted) {
      const entry = /DRIVER: +\[\d+\] (.+)$/.exec(line);
      if (entry?.[1]) names.add(entry[1].trim());
      else sorted = false;
    }
  }
  return [...names];
}
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

/** Where this process runs, for advice that fits it (gpuFixHint). */
export interface GpuSituation {
  /** In a container (/.dockerenv, /run/.containerenv, a container cgroup, Kubernetes' or NVIDIA's variables). */
  container: boolean;
  /** WSL2: the GPU is reached through /dev/dxg, Direct3D 12 underneath. */
  wsl: boolean;
  /** An NVIDIA MIG partition was given (NVIDIA_VISIBLE_DEVICES=MIG-…): MIG has no graphics, so no Vulkan. */
  mig: boolean;
  /** The Vulkan variables the user set (VK_*), shown as they are: each changes which drivers the loader sees. */
  vulkanVariables: string[];
}

export interface GpuEnvironment {
  platform: NodeJS.Platform;
  situation?: GpuSituation;
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

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

export function gpuSituation(env: NodeJS.ProcessEnv = process.env): GpuSituation {
  const cgroup = readText('/proc/1/cgroup');
  return {
    container:
      existsSync('/.dockerenv') ||
      existsSync('/run/.containerenv') ||
      /docker|kubepods|containerd|libpod|lxc/.test(cgroup) ||
      env.KUBERNETES_SERVICE_HOST !== undefined ||
      Object.keys(env).some((name) => name.startsWith('NVIDIA_')),
    wsl: existsSync('/dev/dxg') || /microsoft/i.test(readText('/proc/version')),
    mig: /\bMIG-/.test(env.NVIDIA_VISIBLE_DEVICES ?? '') || /\bMIG-/.test(env.CUDA_VISIBLE_DEVICES ?? ''),
    vulkanVariables: Object.entries(env)
      .filter(([name, value]) => name.startsWith('VK_') && value !== undefined && value !== '')
      .map(([name, value]) => `${name}=${value}`)
      .sort(),
  };
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
    situation: gpuSituation(env),
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
  const situation = environment.situation;
  const where = [situation?.container && 'a container', situation?.wsl && 'WSL2', situation?.mig && 'a MIG partition'];
  return [
    `GPU devices: ${environment.devices.join(', ') || 'none'}`,
    `Vulkan loader (libvulkan.so.1): ${environment.loader ? (environment.loaderVersion ? environment.loaderVersion.join('.') : 'found') : 'not found'}`,
    `Vulkan drivers: ${drivers.join(', ') || 'none'}`,
    ...(situation?.vulkanVariables.length ? [`set by you: ${situation.vulkanVariables.join(' ')}`] : []),
    ...(where.some(Boolean) ? [`running in ${where.filter(Boolean).join(', ')}`] : []),
  ].join('; ');
}

/** The last sentence of ORT's "…/webgpu_context.cc:136 … was false. Failed to get a WebGPU adapter: …". */
export function gpuErrorText(error: unknown): string {
  const message = messageOf(error);
  const ort = /\S+\.(?:cc|h|cpp):\d+ [^\n]*?(?:was false\.|\]) *([^\n]+)/.exec(message);
  return (ort?.[1] ?? message.split('\n')[0] ?? message).trim();
}

/** The Vulkan loader alone: its Recommends (mesa-vulkan-drivers) would bring lavapipe, a software driver. */
const LOADER_INSTALL = 'apt-get install --no-install-recommends libvulkan1';

/** How to give WebGPU a GPU here: for this OS, and on Linux for the situation (container, WSL2, MIG). Never a
 * software driver: rmbg does not use one. */
export function gpuFixHint(environment: Pick<GpuEnvironment, 'platform' | 'situation'> = gpuEnvironment()): string {
  const { platform, situation } = environment;
  if (platform === 'darwin') return 'WebGPU runs on Metal: it needs macOS 13 or later on a Mac with a Metal GPU';
  if (platform === 'win32')
    return (
      "WebGPU runs on Direct3D 12: install the GPU vendor's current driver; a VM or CI runner without a GPU offers " +
      "only Microsoft's software adapter (WARP), which rmbg does not use"
    );
  const advice: string[] = [];
  if (situation?.mig)
    advice.push(
      "a MIG partition of an NVIDIA GPU has no graphics, so no Vulkan: give the container a whole GPU, or use device 'cpu'",
    );
  if (situation?.wsl)
    advice.push(
      "on WSL2 the GPU is reached through /dev/dxg: Vulkan needs Mesa's Dozen driver (dzn, Vulkan over Direct3D 12; Mesa 23.1 or later built with it), " +
        'and the Windows GPU driver only: do not install a Linux NVIDIA driver inside WSL',
    );
  else if (situation?.container)
    advice.push(
      'inside a container the Vulkan driver comes from the host: with the NVIDIA Container Toolkit set NVIDIA_DRIVER_CAPABILITIES=graphics,compute,utility ' +
        '(or all; the default compute,utility mounts no Vulkan driver) and pass the GPU (--gpus all, or a Kubernetes nvidia.com/gpu limit); ' +
        `AMD and Intel: pass /dev/dri; in the image install only the Vulkan loader (Debian/Ubuntu: ${LOADER_INSTALL})`,
    );
  else
    advice.push(
      `WebGPU runs on Vulkan: install the Vulkan loader (Debian/Ubuntu: ${LOADER_INSTALL}) and the GPU's Vulkan driver ` +
        "(NVIDIA: the driver's Vulkan part, e.g. libnvidia-gl-<version>; AMD and Intel: mesa-vulkan-drivers), " +
        'and make sure this user can open /dev/dri/renderD* or /dev/nvidia*',
    );
  if (situation?.vulkanVariables.length)
    advice.push(
      `check the Vulkan variables you set (${situation.vulkanVariables.join(' ')}): they choose which drivers the loader sees`,
    );
  return advice.join('; ');
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
