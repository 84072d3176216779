// The on-device engine's settings: `rmbg remove --local` and `rmbg serve` flags, the library's and createServer's
// options. library/engine-settings.ts turns them into the engine's options.

import { DEFAULT_DEVICE, DEVICE_DESCRIPTION, DEVICES } from '../api/device.js';
import type { SettingsTable } from './setting.js';

export const ENGINE_SETTINGS = {
  model: {
    type: 'text',
    placeholder: 'name|path',
    env: 'RMBG_MODEL',
    help: 'model name from `rmbg models list`, or a path to an .onnx file',
    defaultText: "the manifest's default model",
  },
  device: {
    type: 'choice',
    choices: DEVICES,
    env: 'RMBG_DEVICE',
    stored: true,
    help: DEVICE_DESCRIPTION,
    // No literal default: RMBG_DEVICE and `rmbg config set device` apply when it is not given.
    defaultText: `\`rmbg config set device\`, else ${DEFAULT_DEVICE}`,
  },
  threads: {
    type: 'whole',
    min: 1,
    max: 1024,
    help: 'threads one inference uses on the CPU',
    defaultText: 'all cores',
  },
  spinWait: {
    type: 'switch',
    default: false,
    help: 'let idle inference threads spin between operators instead of sleeping (faster on an idle many-core machine)',
  },
  graphCache: {
    type: 'switch',
    default: true,
    help: "optimise the model's graph at each start instead of keeping it in the user's cache folder",
    doc: "keep the model's optimised graph in the user's cache folder, so the next start skips optimising it",
  },
  cleanEdges: {
    type: 'switch',
    default: true,
    help: "keep the photo's own colours under soft edges (hair, fur), old background included",
    doc:
      "estimate the subject's own colour under soft edges (hair, fur), so the old background does not show as a " +
      'halo on a new one (blur fusion: docs/photographers.md)',
  },
} as const satisfies SettingsTable;
