// The settings of `rmbg remove` and of the library's removeBackground() / removeBackgrounds(), besides the image
// options (api/options.ts OPTION_FIELDS) and the engine's (settings/engine.ts). CALL_SETTINGS apply to one
// image, BATCH_SETTINGS to a folder run; rows marked cliOnly are flags without a library option.

import { LIMITS } from '../api/limits.js';
import { SUSPECT_BELOW } from '../engine/output/mask-confidence.js';
import type { SettingsTable } from './setting.js';

export const CALL_SETTINGS = {
  apiUrl: {
    type: 'text',
    placeholder: 'url',
    env: 'RMBG_API_URL',
    stored: true,
    help: 'base URL of a server that speaks the API (the /v1.0 prefix is added); without one, rmbg runs on this computer',
    defaultText: '`rmbg config set api-url`, else none: on this computer',
    libraryDefault: 'none: on this computer',
  },
  apiKey: {
    type: 'text',
    placeholder: 'key',
    env: 'RMBG_API_KEY',
    stored: true,
    help: "API key, or - to read it from stdin; prefer the environment or '-': a key on the command line shows in `ps` and shell history",
    doc: 'API key for apiUrl',
    defaultText: '`rmbg config set api-key`',
    libraryDefault: 'none',
  },
  timeoutMs: {
    type: 'whole',
    min: 1000,
    max: 2_147_483_647,
    default: LIMITS.clientTimeoutMs,
    unit: 'milliseconds',
    flag: '--timeout',
    flagInSeconds: true,
    help: 'time limit of one request to the server',
  },
  keepMetadata: {
    type: 'switch',
    default: false,
    help: "keep the photo's EXIF artist, copyright and dates in the result (never its GPS position)",
  },
  keepGps: {
    type: 'switch',
    default: false,
    help: "also keep the photo's GPS position (implies keeping the other metadata)",
  },
  mask: {
    type: 'switch',
    default: false,
    help:
      "on this computer: also write the cutout's alpha as a grayscale PNG at the photo's full size, uncropped " +
      '(photo.mask.png beside photo.png; 16-bit for a 16-bit photo)',
  },
  raw: {
    type: 'choice',
    choices: ['preview', 'develop'],
    default: 'preview',
    help:
      "camera RAW files: preview reads the camera's own full-size JPEG inside the RAW (fast; a RAW whose " +
      'preview is smaller than its sensor is developed), develop develops the RAW with LibRaw (camera ' +
      'white balance, sRGB)',
  },
} as const satisfies SettingsTable;

export const BATCH_SETTINGS = {
  outDir: {
    type: 'text',
    placeholder: 'dir',
    flag: '-o, --output',
    default: 'rmbg-out',
    requiredInLibrary: true,
    help: "output folder: each result keeps its input's subfolder and name, and the folder's journal lets a re-run resume",
  },
  local: {
    type: 'switch',
    cliOnly: true,
    help: 'run on this computer (on-device model, no account, no network) even when an API URL is configured; the default when none is',
  },
  recursive: { type: 'switch', flag: '-r, --recursive', help: 'descend into subfolders of input folders' },
  watch: {
    type: 'switch',
    flag: '-w, --watch',
    help: 'keep running: process photos as they land in the input folders (once a file stops growing); Ctrl-C stops after the photos in flight',
  },
  maskOnly: {
    type: 'switch',
    help: 'on this computer: write only the mask (photo.mask.png), no cutout; with the input -, the mask goes to stdout',
  },
  rawPairs: {
    type: 'choice',
    choices: ['raw', 'jpeg', 'both'],
    default: 'raw',
    help:
      'a camera RAW and a JPEG of one shot in one folder (IMG_0001.CR2 + IMG_0001.JPG): process the RAW ' +
      '(its JPEG is left, and counted in the summary), the JPEG, or both (written as IMG_0001.CR2.png ' +
      'and IMG_0001.JPG.png)',
  },
  overwrite: { type: 'switch', help: 'replace existing outputs (default: skip them, which is how a re-run resumes)' },
  concurrency: {
    type: 'whole',
    min: 1,
    max: 64,
    help: 'images in flight at once',
    // On this computer the engine's device report says how many (its rule is the engine's, not retold here).
    defaultText:
      `through a server ${LIMITS.remoteConcurrency} (halved while it answers 429/503); ` +
      'on this computer as many as keep its device busy, within the memory left',
  },
  runTimeoutMs: {
    type: 'whole',
    min: 1000,
    max: 2_147_483_647,
    default: LIMITS.runTimeoutMs,
    unit: 'milliseconds',
    flag: '--run-timeout',
    flagInSeconds: true,
    help:
      "on this computer: time limit of one model run (a hung GPU or kernel), the GPU's first run (shader " +
      "compilation) included; past it the photo fails and the model's worker is set aside",
  },
  retryFailed: { type: 'switch', help: 'retry files the journal records as failed for a reason a retry will not fix' },
  reviewBelow: {
    type: 'fraction',
    default: SUSPECT_BELOW,
    help:
      'cutouts whose confidence (0..1, from the mask) is under this are flagged: counted in the summary ' +
      "and shown first in the output folder's review.html; the default flags what the rule of many ambiguous " +
      'edge pixels or a tiny foreground would',
  },
  reviewPage: {
    type: 'switch',
    help: "write the output folder's review.html even when no cutout is flagged (it is written when one is)",
  },
  retryReview: {
    type: 'switch',
    help: 'run only the cutouts the journal flagged (confidence under --review-below) again, on this computer, overwriting them; give another --model',
    doc: 'run only the cutouts the journal flagged (confidence under reviewBelow) again, on this computer, overwriting them; give another model',
  },
  json: {
    type: 'switch',
    cliOnly: true,
    help: 'one JSON object per file and a summary line, instead of a progress bar (the default when stdout is not a terminal)',
  },
  dryRun: {
    type: 'switch',
    cliOnly: true,
    help: 'list what would be sent and the credits it would cost; send nothing',
  },
  confirmOver: {
    type: 'whole',
    min: 0,
    cliOnly: true,
    help: 'ask before spending more than this many credits (refuse without a terminal)',
  },
} as const satisfies SettingsTable;
