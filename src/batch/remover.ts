// The one interface the batch drives, whether images are processed in-process (--local) or by an API
// server. Everything mode-specific (credits, idempotency keys, retries) lives behind it.

import type { OutputFormat, RemoveOptions } from '../api/options.js';
import type { BackgroundRemover } from '../engine/types.js';

export interface RemovedImage {
  data: Buffer;
  format: OutputFormat;
  width: number;
  height: number;
  /** Credits the server charged (0 locally, and on an idempotent replay the original charge). */
  creditsCharged: number;
  /** True when the server replayed an earlier success (no new charge). */
  replayed: boolean;
}

export interface RemoveCall {
  idempotencyKey?: string;
  signal?: AbortSignal;
  filename?: string;
}

export interface Remover {
  readonly mode: 'local' | 'remote';
  remove(image: Buffer, options: RemoveOptions, call: RemoveCall): Promise<RemovedImage>;
  /** Remote only: called whenever the server asks to slow down (429/503), so the batch lowers concurrency. */
  onThrottle?(listener: () => void): void;
  /** Remote only: the account's balance, for messages; undefined when the server cannot tell. */
  creditsLeft?(): Promise<number | undefined>;
  close(): Promise<void>;
}

export function localRemover(engine: BackgroundRemover): Remover {
  return {
    mode: 'local',
    async remove(image, options, call) {
      const result = await engine.removeBackground(image, options, call.signal);
      return { data: result.data, format: result.format, width: result.width, height: result.height, creditsCharged: 0, replayed: false };
    },
    close: () => engine.close(),
  };
}
