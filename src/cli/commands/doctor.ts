// `rmbg doctor`: one screen to paste into a bug report (or --json): versions, onnxruntime's providers, whether
// the GPU works and whether `auto` would use it (asked of child processes, so this one stays clean), each
// model and whether its weights verify, and where the data directory, the store and the settings are.

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadConfig } from '../../config/load-config.js';
import { dataDirOf } from '../../config/setting-rules.js';
import { DEVICES, SOFTWARE_GPU_OPT_IN } from '../../api/device.js';
import {
  describeEnvironment,
  gpuEnvironment,
  gpuFixHint,
  mayHaveHardwareGpu,
  type GpuEnvironment,
} from '../../engine/gpu/gpu-environment.js';
import { probeGpu } from '../../engine/gpu/gpu-probe.js';
import {
  describeVerdict,
  fewestPhotosForGpu,
  readVerdict,
  verdictKey,
  type GpuVerdict,
} from '../../engine/gpu/gpu-verdict.js';
import { checkOnnxruntime, checkSharp, type NativePart } from '../../platform/native-parts.js';
import { rmbgVersion } from '../../platform/package-info.js';
import { storeTarget } from '../../store/open-store.js';
import { redactedStoreUrl } from '../../store/redact-url.js';
import { EXIT } from '../exit-codes.js';
import { checkSqlite } from '../sqlite-check.js';
import { modelRows } from './models-list.js';
import { resolveModel } from '../../engine/model/model-registry.js';
import { userModelsDirOf } from '../../engine/model/user-models.js';
import { messageOf } from '../../api/errors.js';

interface GpuReport {
  works: boolean;
  /** The adapters offered, by the names their drivers report (Vulkan); empty where not known. */
  adapters: string[];
  /** Only a software adapter (lavapipe, SwiftShader, WARP) works: no GPU for rmbg. */
  software: boolean;
  error?: string;
  fix?: string;
  /** What the Vulkan loader and Dawn printed while WebGPU looked for an adapter. */
  log: string[];
  seen: string;
  /** What `--device auto` picks here, and why. */
  auto: { device: 'gpu' | 'cpu'; reason: string };
  /** auto's remembered GPU-or-CPU verdict for the model runs use (gpu-verdict.ts); null until a start measured it. */
  verdict: GpuVerdict | null;
}

/** auto's verdict for the model named by the settings (else the default), when a start has measured it. */
function rememberedVerdict(environment: GpuEnvironment, model: string | undefined, dataDir: string): GpuVerdict | null {
  try {
    return readVerdict(verdictKey(environment, resolveModel(model, userModelsDirOf(dataDir)))) ?? null;
  } catch {
    return null;
  }
}

async function gpuReport(model: string | undefined, dataDir: string): Promise<GpuReport> {
  const environment = gpuEnvironment();
  const hardware = mayHaveHardwareGpu(environment);
  // Both views at once: as `gpu` sees the machine, and as `auto` does (software adapters hidden).
  const [asked, asAuto] = await Promise.all([
    probeGpu('allowed', { environment }),
    hardware ? probeGpu('hidden', { environment }) : undefined,
  ]);
  const auto: GpuReport['auto'] = !hardware
    ? { device: 'cpu', reason: 'no GPU device found; auto never uses a software adapter' }
    : asAuto?.ok
      ? { device: 'gpu', reason: 'a hardware adapter works' }
      : { device: 'cpu', reason: `no hardware adapter works: ${asAuto?.error ?? 'unknown'}` };
  return {
    works: asked.ok,
    adapters: asked.adapters,
    // By the adapters' names, or: it works, yet not as auto sees the machine (software drivers hidden).
    software: asked.ok && (asked.software || !asAuto?.ok),
    ...(asked.error !== undefined && { error: asked.error }),
    ...((asked.error !== undefined || (asked.ok && (asked.software || !asAuto?.ok))) && {
      fix: gpuFixHint(environment),
    }),
    log: asked.log,
    seen: describeEnvironment(environment),
    auto,
    verdict: rememberedVerdict(environment, model, dataDir),
  };
}

interface DoctorReport {
  rmbg: string;
  node: string;
  platform: string;
  /** The C library's malloc and whether its thresholds are fixed; `fix` where they are not and should be. */
  allocator: { libc: string; thresholds: string; fix?: string };
  onnxruntime: string;
  providers: string[];
  /** Each native part loaded for real: sharp, onnxruntime's binding, the SQLite driver. */
  native: NativePart[];
  device: { value: string | undefined; source: string };
  /** The model runs use when none is named: RMBG_MODEL, else the manifest's default; `problem` when it cannot load. */
  model: { value: string | undefined; source: string; problem: string | undefined };
  gpu: GpuReport;
  models: Array<{ name: string; default: boolean; status: string; bytes: number; path: string }>;
  dataDir: { path: string; exists: boolean };
  store: { engine: 'sqlite'; path: string; exists: boolean } | { engine: 'postgres'; at: string };
  settingsFile: string;
}

/** bin/malloc-tuning.js, the command's first step (plain CommonJS: it runs before any module of dist/). */
interface MallocTuning {
  MALLOC_TUNABLES: string;
  RESTARTED: string;
  mallocThresholdsFixed(env: NodeJS.ProcessEnv): boolean;
  glibcVersion(): string | undefined;
}

/** Whether glibc's malloc runs with fixed thresholds, without which a long run's memory grows (malloc-tuning.js). */
function allocatorReport(): DoctorReport['allocator'] {
  const tuning = createRequire(import.meta.url)('../../../bin/malloc-tuning.js') as MallocTuning;
  const version = tuning.glibcVersion();
  if (version === undefined) return { libc: `${process.platform}'s, not glibc`, thresholds: 'nothing to fix' };
  const glibc = `glibc ${version}`;
  if (tuning.mallocThresholdsFixed(process.env))
    return { libc: glibc, thresholds: `fixed thresholds (GLIBC_TUNABLES=${process.env.GLIBC_TUNABLES ?? ''})` };
  const startWith = `start it with GLIBC_TUNABLES=${tuning.MALLOC_TUNABLES} (docs/deploy.md)`;
  return {
    libc: glibc,
    thresholds: "dynamic thresholds (a long run's memory grows: glibc keeps the image-sized buffers it frees)",
    fix:
      process.env[tuning.RESTARTED] !== undefined
        ? 'glibc dropped the GLIBC_TUNABLES rmbg restarted with: it ignores malloc settings in a privileged ' +
          'process (setcap, setuid); run rmbg without privileges (a port above 1023, or the sysctl net.ipv4.ip_unprivileged_port_start) ' +
          '(docs/deploy.md)'
        : `Node.js ${process.version} cannot restart rmbg with them fixed (22.15 and later can; rmbg serve ` +
          `runs in a child process that has them): ${startWith}`,
  };
}

function onnxruntimeVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('onnxruntime-node/package.json') as { version: string }).version;
}

async function providers(): Promise<string[]> {
  try {
    const ort = await import('onnxruntime-node');
    return ort.listSupportedBackends().map((backend) => `${backend.name}${backend.bundled ? '' : ' (not bundled)'}`);
  } catch {
    return []; // reported with its fix under native parts
  }
}

export async function run(opts: Record<string, unknown>): Promise<number> {
  const config = loadConfig();
  const dataDir = dataDirOf(opts.dataDir as string | undefined);
  const target = storeTarget(opts.store as string | undefined, dataDir);
  const [gpu, models, backends, native] = await Promise.all([
    gpuReport(config.model.value, dataDir),
    modelRows(dataDir),
    providers(),
    Promise.all([checkSharp(), checkOnnxruntime(), checkSqlite()]),
  ]);
  const device = { value: config.device.value, source: config.device.source };
  const model = {
    value: config.model.value,
    source: config.model.source,
    problem: config.model.value === undefined ? undefined : modelProblem(config.model.value, dataDir, models),
  };
  const report: DoctorReport = {
    rmbg: rmbgVersion(),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    allocator: allocatorReport(),
    onnxruntime: onnxruntimeVersion(),
    providers: backends,
    native,
    device,
    model,
    gpu,
    models: models.map((model) => ({
      name: model.name,
      default: model.default,
      status: model.status,
      bytes: model.bytes,
      path: model.path,
    })),
    dataDir: { path: dataDir, exists: existsSync(dataDir) },
    // A PostgreSQL URL may hold a password: only its host and database are shown.
    store:
      target.engine === 'sqlite'
        ? { engine: 'sqlite', path: target.path, exists: existsSync(target.path) }
        : { engine: 'postgres', at: redactedStoreUrl(target.url) },
    settingsFile: config.settingsPath,
  };
  // Broken for what the settings ask: a native part that does not load, a device setting that is not one, the GPU asked for and not working, or
  // the model runs use (RMBG_MODEL, else the default) not usable. A wrong setting is shown, not thrown.
  const wanted = DEVICES.find((value) => value === device.value);
  const broken =
    // SQLite only where the store is a SQLite file.
    native.some((part) => !part.loads && (part.name !== 'SQLite' || target.engine === 'sqlite')) ||
    wanted === undefined ||
    (wanted === 'gpu' && (!gpu.works || (gpu.software && process.env[SOFTWARE_GPU_OPT_IN] !== '1'))) ||
    (model.value === undefined
      ? models.some((row) => row.default && (row.status === 'missing' || row.status === 'corrupt'))
      : model.problem !== undefined);
  process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : text(report));
  return broken ? EXIT.failed : EXIT.ok;
}

/** Why the model named by a setting cannot load here, or undefined when it can. */
function modelProblem(
  nameOrPath: string,
  dataDir: string,
  rows: Awaited<ReturnType<typeof modelRows>>,
): string | undefined {
  try {
    const resolved = resolveModel(nameOrPath, userModelsDirOf(dataDir));
    const row = rows.find((each) => each.name === resolved.name);
    if (row) return row.status === 'missing' || row.status === 'corrupt' ? `its weights are ${row.status}` : undefined;
    return existsSync(resolved.path) ? undefined : `no file at ${resolved.path}`;
  } catch (error) {
    return messageOf(error);
  }
}

function text(report: DoctorReport): string {
  const { gpu } = report;
  const lines = [
    `rmbg ${report.rmbg} on Node.js ${report.node} (${report.platform})`,
    `onnxruntime-node ${report.onnxruntime}; providers: ${report.providers.join(', ')}`,
    `memory allocator: ${report.allocator.libc}, ${report.allocator.thresholds}`,
    ...(report.allocator.fix ? [`  fix: ${report.allocator.fix}`] : []),
    ...report.native.flatMap((part) =>
      part.loads
        ? [`${part.name}: loads (${part.version})`]
        : [`${part.name}: cannot load: ${part.error}`, ...(part.fix ? [`  fix: ${part.fix}`] : [])],
    ),
    `model setting: ${modelSetting(report.model)}`,
    `device setting: ${deviceSetting(report.device)}`,
    '',
    'GPU (WebGPU)',
    gpu.works
      ? gpu.software
        ? `  works: no GPU: only a software adapter${gpu.adapters.length ? ` (${gpu.adapters.join(', ')})` : ''}, slower than the CPU; --device gpu refuses it`
        : `  works: yes${gpu.adapters.length ? ` (${gpu.adapters.join(', ')})` : ''}`
      : `  works: no: ${gpu.error}`,
    `  auto uses: the ${gpu.auto.device === 'gpu' ? 'GPU' : 'CPU'} (${gpu.auto.reason})`,
    `  auto's verdict for the model: ${verdictText(gpu.verdict)}`,
    `  seen: ${gpu.seen}`,
    ...(gpu.fix ? [`  fix: ${gpu.fix}`] : []),
    ...(gpu.log.length ? ['  the Vulkan loader and Dawn said:', ...gpu.log.map((line) => `    ${line}`)] : []),
    '',
    'Models',
    ...report.models.map(
      (model) =>
        `  ${model.name}${model.default ? ' (default)' : ''}  ${(model.bytes / 1e6).toFixed(1)} MB  ${model.status}  ${model.path}`,
    ),
    '',
    `data directory: ${report.dataDir.path}${report.dataDir.exists ? '' : ' (not created yet)'}`,
    `store: ${storeText(report.store)}`,
    `settings file: ${report.settingsFile}`,
  ];
  return `${lines.join('\n')}\n`;
}

function modelSetting(model: DoctorReport['model']): string {
  if (model.value === undefined) return "none (the manifest's default)";
  return `${model.value} (from ${model.source})${model.problem ? `: cannot load: ${model.problem}` : ''}`;
}

function deviceSetting(device: DoctorReport['device']): string {
  const source = device.source === 'default' ? 'the default' : `from ${device.source}`;
  const known = (DEVICES as readonly (string | undefined)[]).includes(device.value);
  return `${device.value} (${source})${known ? '' : `: not one of ${DEVICES.join(', ')}`}`;
}

function verdictText(verdict: GpuVerdict | null): string {
  if (!verdict)
    return 'not measured yet (the first start with auto on a GPU measures it: rmbg serve, --watch, the library, or rmbg remove with two photos or more)';
  const faster = `the ${verdict.device === 'gpu' ? 'GPU' : 'CPU'} is faster (${describeVerdict(verdict)})`;
  const fewest = fewestPhotosForGpu(verdict);
  return fewest > 1 && Number.isFinite(fewest)
    ? `${faster}; a job of fewer than ${fewest} photos runs on the CPU, which starts sooner`
    : faster;
}

function storeText(store: DoctorReport['store']): string {
  if (store.engine !== 'sqlite') return `PostgreSQL ${store.at}`;
  return `SQLite ${store.path}${store.exists ? '' : ' (not created yet)'}`;
}
