// The device setting, declared once: its values and its default (checked by its row in settings/engine.ts, for
// `--device`, `RMBG_DEVICE`, `rmbg config set device`, the library's and createServer's `device`), and the report
// of where a model runs that the engine gives and the CLI, /readyz and /metrics show.

/** auto: the GPU when a hardware adapter works, else the CPU; gpu: the GPU or an error; cpu: the CPU only. */
export const DEVICES = ['auto', 'gpu', 'cpu'] as const;
export type Device = (typeof DEVICES)[number];
export const DEFAULT_DEVICE: Device = 'auto';
export const DEVICE_DESCRIPTION =
  'where the model runs: auto (the GPU when a hardware one works, else the CPU), gpu (WebGPU, or an error), cpu';

/** For tests only (the test suite's GPU is lavapipe): set to 1, a software adapter (lavapipe, SwiftShader, WARP)
 * counts as a GPU for `gpu` and `auto`, which otherwise never run on one. */
export const SOFTWARE_GPU_OPT_IN = 'RMBG_TEST_SOFTWARE_GPU';

/** Where a model runs and why: said once on stderr, and carried by --json, /readyz and /metrics. */
export interface DeviceReport {
  /** What was asked for. */
  requested: Device;
  /** What runs: 'gpu' is onnxruntime's WebGPU provider, 'cpu' its CPU provider. */
  device: 'gpu' | 'cpu';
  /** Why, in one sentence. */
  reason: string;
  /** Images in flight that keep this device busy (the batch's default concurrency; a GPU server's slots). */
  concurrency: number;
}
