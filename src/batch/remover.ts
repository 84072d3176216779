// The one interface the batch drives, whether images are processed in-process (--local) or by an API
// server. Everything mode-specific (credits, idempotency keys and their rotation, retries) lives behind it;
// the batch only keeps the remover's token in its journal and hands it back on the next run.

import { LIMITS } from '../api/limits.js';
import { RmbgError } from '../api/errors.js';
import { localOnlyValues, type OutputFormat, type RemoveOptions } from '../api/options.js';
import type { ForegroundBox } from '../api/wire-types.js';
import type { DeviceReport } from '../api/device.js';
import type { Engine } from '../engine/types.js';
import { engineInput, type PhotoReading } from './photo-conversion.js';

export interface RemovedImage {
  data: Buffer;
  format: OutputFormat;
  width: number;
  height: number;
  /** Credits the server charged (0 locally, and on an idempotent replay the original charge). */
  creditsCharged: number;
  /** True when the server replayed an earlier success (no new charge). */
  replayed: boolean;
  /** The token of the request that produced this result (as given to beforeSend). */
  token: string | undefined;
  /** Undefined only from a server that does not send the X-Foreground-* headers. */
  foreground: ForegroundBox | undefined;
  /** 0..1 from the mask (engine/output/mask-confidence.ts); undefined only from a server that does not send it. */
  confidence: number | undefined;
  /** Where the model ran: on this computer, its GPU or CPU; undefined through a server (it does not say). */
  device?: DeviceReport['device'];
  /** With RemoveCall.mask, on this computer: the mask file's PNG (engine/layered-output.ts). */
  mask?: Buffer;
}

export interface RemoveCall {
  signal?: AbortSignal;
  filename?: string;
  /** What this remover gave as token for the same image and options in an earlier run (from the journal). */
  earlier?: {
    token: string;
    /** Whether that run recorded a result for it; if not, the request may have been charged without one. */
    finished: boolean;
    /** When the token was first sent (ms since the epoch), when the journal knows. */
    sentAt?: number;
  };
  /** Also make the mask file, or only it (on this computer only: see refuseLocalOnly). */
  mask?: 'beside' | 'only' | undefined;
  /** --retry-failed: a request an earlier run may have paid for without a result may be paid for again. */
  payAgain?: boolean;
  /** Awaited before each request goes out, with the opaque token to keep; the batch journals it first. */
  beforeSend?: (token: string | undefined) => Promise<void>;
}

export interface Remover {
  readonly mode: 'local' | 'remote';
  /** Where an on-device remover's model runs. */
  readonly device?: DeviceReport;
  /**
   * The settings it runs with, by their rows' names (settings/): the engine's options, or the server's URL, key
   * (its end only) and time limit, and the metadata kept. The batch's start event reports them in force.
   */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** Why it cannot run flagged cutouts again with another model (--retry-review); absent when it can. */
  readonly retryReviewRefusal?: string;
  /** Throws where it cannot make the outputs asked for (a server makes no layered or alpha-only output). */
  readonly refuseOutputs?: (options: RemoveOptions, mask: boolean) => void;
  remove(image: Buffer, options: RemoveOptions, call: RemoveCall): Promise<RemovedImage>;
  /** Called whenever the server asks to slow down (429/503), so the batch lowers concurrency. */
  onThrottle?(listener: () => void): void;
  /** The account's balance, for messages; undefined when the remover cannot tell. */
  creditsLeft?(): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * Images in flight at once: the `concurrency` given, else by default: local, what keeps its device busy (the
 * engine's device report); remote, LIMITS.remoteConcurrency (halved on 429/503).
 */
export function concurrencyOf(given: number | undefined, remover: Pick<Remover, 'mode' | 'device'>): number {
  return given ?? (remover.mode === 'local' ? (remover.device?.concurrency ?? 2) : LIMITS.remoteConcurrency);
}

/** `reading`: how a photo the API does not take is read (a RAW's preview or development). */
export function localRemover(engine: Engine, reading: PhotoReading = {}): Remover {
  return {
    mode: 'local',
    ...(engine.device && { device: engine.device }),
    settings: { ...engine.options, ...(reading.raw && { raw: reading.raw }) },
    async remove(image, options, call) {
      await call.beforeSend?.(undefined);
      // The photo's own bytes go along: a TIFF's 16 bits and profile, which its decoded copy lacks, make the layers.
      const local = { mask: call.mask, original: image };
      const result = await engine.cutOut(await engineInput(image, reading), options, call.signal, local);
      return {
        data: result.data,
        format: result.format,
        width: result.width,
        height: result.height,
        creditsCharged: 0,
        replayed: false,
        token: undefined,
        foreground: result.foreground,
        confidence: result.confidence,
        device: engine.device?.device,
        ...(result.mask && { mask: result.mask }),
      };
    },
    close: () => engine.close(),
  };
}

/** Through a server, what only this computer makes (a layered format, the mask file) is refused before anything is
 * sent: the API has no layered or alpha-only output (api-spec), and the server would refuse it anyway. */
export function refuseLocalOnly(options: RemoveOptions, mask: boolean | undefined): void {
  const asked = [...localOnlyValues(options), ...(mask ? ['the mask file (mask, maskOnly)'] : [])];
  if (asked.length === 0) return;
  throw new RmbgError(
    'usage_error',
    `${asked.join(' and ')}: local only, made on this computer (the API has no layered or alpha-only output); run without the server's URL, or add --local`,
  );
}

/** What the photo's metadata the results keep (settings/remove.ts keepMetadata, keepGps). */
export interface KeptMetadata {
  keepMetadata?: boolean | undefined;
  /** Asks for the position, so it keeps the rest of the kept metadata too. */
  keepGps?: boolean | undefined;
}

/** `remover` with the photo's kept metadata embedded into each result, on this computer or from a server (which sends none). */
export async function keepingMetadata(remover: Remover, kept: KeptMetadata): Promise<Remover> {
  if (!kept.keepMetadata && !kept.keepGps)
    return { ...remover, settings: { ...remover.settings, keepMetadata: false, keepGps: false } };
  const { withKeptMetadata } = await import('../engine/image/keep-metadata.js');
  const policy = { keep: true, gps: Boolean(kept.keepGps) };
  return {
    ...remover,
    settings: { ...remover.settings, keepMetadata: policy.keep, keepGps: policy.gps },
    async remove(image, options, call) {
      const result = await remover.remove(image, options, call);
      return { ...result, data: await withKeptMetadata(image, result, policy) };
    },
  };
}
