// The jobs a pixel worker runs, by name: the pixel operations of output/pixel-operations.ts, a HEIC's decode
// (image/heic-decoder.ts) and a RAW's development (raw/raw-develop.ts). pixel-worker-entry.ts dispatches them on a worker; `inProcess` runs them here (a test's
// yardstick for the workers' bytes).

import { bufferOf } from '../../platform/thread-transfer.js';
import { finishCutout, fitMask, modelTensor } from '../output/pixel-operations.js';
import type { DevelopedRaw, RawDevelopJob } from '../raw/raw-develop.js';

/** A HEIC's bytes and the size of the image to decode (its primary, whose header was checked). */
export interface HeicJob {
  heic: Uint8Array;
  width: number;
  height: number;
}

/** The HEIC's image as RGBA bytes (image/heic-decoder.ts: libheif in WebAssembly, seconds for a 12 MP photo, which
 * on the main thread held every other photo in flight); undefined when it holds no image of that size. */
async function decodeHeic({ heic, width, height }: HeicJob): Promise<Uint8Array | undefined> {
  const { decodeHeicPixels } = await import('../image/heic-decoder.js'); // loaded only when a HEIC comes
  return decodeHeicPixels(bufferOf(heic), { width, height });
}

/** A camera RAW developed by LibRaw (raw/raw-develop.ts: WebAssembly, seconds for a 24 MP RAW). */
async function developRaw(job: RawDevelopJob): Promise<DevelopedRaw> {
  const { developRaw: develop } = await import('../raw/raw-develop.js'); // loaded only when a RAW is developed
  return develop(job);
}

/** The jobs a pixel worker runs, by name: what pixel-worker-entry.ts dispatches and a test calls in process. */
export const PIXEL_JOBS = {
  tensor: modelTensor,
  mask: fitMask,
  finish: finishCutout,
  heic: decodeHeic,
  raw: developRaw,
};

export type PixelJobName = keyof typeof PIXEL_JOBS;
export type PixelJobInput<Name extends PixelJobName> = Parameters<(typeof PIXEL_JOBS)[Name]>[0];
export type PixelJobOutput<Name extends PixelJobName> = Awaited<ReturnType<(typeof PIXEL_JOBS)[Name]>>;

/** Runs a job's work somewhere: on a pixel worker (pixel-workers.ts `onPixelWorker`) or in process (`inProcess`).
 * `transfer`: buffers the caller gives up, moved to a worker rather than copied. */
export type PixelWork = <Name extends PixelJobName>(
  name: Name,
  input: PixelJobInput<Name>,
  transfer?: ArrayBuffer[],
) => Promise<PixelJobOutput<Name>>;

/** One job run on this thread: the worker's dispatch, and the in-process path. */
export async function runPixelJob<Name extends PixelJobName>(
  name: Name,
  input: PixelJobInput<Name>,
): Promise<PixelJobOutput<Name>> {
  const job = PIXEL_JOBS[name] as (input: PixelJobInput<Name>) => PixelJobOutput<Name> | Promise<PixelJobOutput<Name>>;
  return job(input);
}

/** The jobs on the calling thread (a test's yardstick for the workers' bytes). */
export const inProcess: PixelWork = (name, input) => runPixelJob(name, input);
