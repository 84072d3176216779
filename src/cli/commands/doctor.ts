// `rmbg doctor`: one screen to paste into a bug report (or --json): versions, onnxruntime's providers, whether
// the GPU works and whether `auto` would use it (asked of child processes, so this one stays clean), each
// model and whether its weights verify, and where the data directory, the store and the settings are.

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadConfig } from '../../config/load-config.js';
import { dataDirOf } from '../../config/setting-rules.js';
import { DEVICES } from '../../api/device.js';
import { describeEnvironment, gpuEnvironment, gpuFixHint, mayHaveHardwareGpu } from '../../engine/gpu-environment.js';
import { probeGpu } from '../../engine/gpu-probe.js';
import { storeTarget } from '../../store/open-store.js';
import { redactedStoreUrl } from '../../store/redact-url.js';
import { EXIT } from '../exit-codes.js';
import { modelRows } from './models-list.js';
import { resolveModel } from '../../engine/model-registry.js';
import { userModelsDirOf } from '../../engine/user-models.js';

interface GpuReport {
  works: boolean;
  /** A software adapter (lavapipe, SwiftShader): no GPU device was found, yet WebGPU works. */
  software: boolean;
  error?: string;
  fix?: string;
  /** What the Vulkan loader and Dawn printed while WebGPU looked for an adapter. */
  log: string[];
  seen: string;
  /** What `--device auto` picks here, and why. */
  auto: { device: 'gpu' | 'cpu'; reason: string };
}

async function gpuReport(): Promise<GpuReport> {
  const environment = gpuEnvironment();
  const hardware = mayHaveHardwareGpu(environment);
  // Both views at once: as `gpu` sees the machine, and as `auto` does (software adapters hidden).
  const [asked, asAuto] = await Promise.all([
    probeGpu('allowed', environment),
    hardware ? probeGpu('hidden', environment) : undefined,
  ]);
  const auto: GpuReport['auto'] = !hardware
    ? { device: 'cpu', reason: 'no GPU device found; auto never uses a software adapter' }
    : asAuto?.ok
      ? { device: 'gpu', reason: 'a hardware adapter works' }
      : { device: 'cpu', reason: `no hardware adapter works: ${asAuto?.error ?? 'unknown'}` };
  return {
    works: asked.ok,
    // It works, yet not as auto sees the machine (software drivers hidden, or no GPU device): a software adapter.
    software: asked.ok && !asAuto?.ok,
    ...(asked.error !== undefined && { error: asked.error, fix: gpuFixHint() }),
    log: asked.log,
    seen: describeEnvironment(environment),
    auto,
  };
}

interface DoctorReport {
  rmbg: string;
  node: string;
  platform: string;
  onnxruntime: string;
  providers: string[];
  device: { value: string | undefined; source: string };
  /** The model runs use when none is named: RMBG_MODEL, else the manifest's default; `problem` when it cannot load. */
  model: { value: string | undefined; source: string; problem: string | undefined };
  gpu: GpuReport;
  models: Array<{ name: string; default: boolean; status: string; bytes: number; path: string }>;
  dataDir: { path: string; exists: boolean };
  store: { engine: 'sqlite'; path: string; exists: boolean } | { engine: 'postgres'; at: string };
  settingsFile: string;
}

function onnxruntimeVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('onnxruntime-node/package.json') as { version: string }).version;
}

async function providers(): Promise<string[]> {
  const ort = await import('onnxruntime-node');
  return ort.listSupportedBackends().map((backend) => `${backend.name}${backend.bundled ? '' : ' (not bundled)'}`);
}

export async function run(opts: Record<string, unknown>): Promise<number> {
  const config = loadConfig();
  const dataDir = dataDirOf(opts.dataDir as string | undefined);
  const target = storeTarget(opts.store as string | undefined, dataDir);
  const [gpu, models, backends] = await Promise.all([gpuReport(), modelRows(dataDir), providers()]);
  const device = { value: config.device.value, source: config.device.source };
  const model = {
    value: config.model.value,
    source: config.model.source,
    problem: config.model.value === undefined ? undefined : modelProblem(config.model.value, dataDir, models),
  };
  const report: DoctorReport = {
    rmbg: (createRequire(import.meta.url)('../../../package.json') as { version: string }).version,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    onnxruntime: onnxruntimeVersion(),
    providers: backends,
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
  // Broken for what the settings ask: a device setting that is not one, the GPU asked for and not working, or
  // the model runs use (RMBG_MODEL, else the default) not usable. A wrong setting is shown, not thrown.
  const wanted = DEVICES.find((value) => value === device.value);
  const broken =
    wanted === undefined ||
    (wanted === 'gpu' && !gpu.works) ||
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
    return (error as Error).message;
  }
}

function text(report: DoctorReport): string {
  const { gpu } = report;
  const lines = [
    `rmbg ${report.rmbg} on Node.js ${report.node} (${report.platform})`,
    `onnxruntime-node ${report.onnxruntime}; providers: ${report.providers.join(', ')}`,
    `model setting: ${report.model.value === undefined ? "none (the manifest's default)" : `${report.model.value} (from ${report.model.source})${report.model.problem ? `: cannot load: ${report.model.problem}` : ''}`}`,
    `device setting: ${report.device.value} (${report.device.source === 'default' ? 'the default' : `from ${report.device.source}`})${(DEVICES as readonly (string | undefined)[]).includes(report.device.value) ? '' : `: not one of ${DEVICES.join(', ')}`}`,
    '',
    'GPU (WebGPU)',
    gpu.works
      ? `  works: yes${gpu.software ? ', on a software adapter (lavapipe or SwiftShader): far slower than the CPU' : ''}`
      : `  works: no: ${gpu.error}`,
    `  auto uses: the ${gpu.auto.device === 'gpu' ? 'GPU' : 'CPU'} (${gpu.auto.reason})`,
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
    `store: ${report.store.engine === 'sqlite' ? `SQLite ${report.store.path}${report.store.exists ? '' : ' (not created yet)'}` : `PostgreSQL ${report.store.at}`}`,
    `settings file: ${report.settingsFile}`,
  ];
  return `${lines.join('\n')}\n`;
}
