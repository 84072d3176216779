// What the engine takes and gives: the contract between the image pipeline and its callers
// (service, batch). It knows nothing of credits, keys or HTTP.

import type { OutputFormat, RemoveOptions } from '../api/options.js';
import type { ForegroundBox } from '../api/wire-types.js';
import type { DeviceReport } from '../api/device.js';

export interface EngineResult {
  /** Encoded image bytes. */
  data: Buffer;
  format: OutputFormat;
  /** image/png, image/jpeg or image/webp */
  mimeType: string;
  width: number;
  height: number;
  /** Foreground box on the normalized (EXIF-oriented) input canvas, in input pixels. */
  foreground: ForegroundBox;
  /** How far the cutout can be trusted, 0..1, from its mask (output/mask-confidence.ts); under 0.5: check it. */
  confidence: number;
  /** Milliseconds spent per stage, for the bench and --json output. */
  timings: Record<string, number>;
  /** With LocalOutputs.mask: the alpha at the photo's full size, uncropped, as a grayscale PNG (16-bit for a 16-bit photo). */
  mask?: Buffer;
}

/** What rmbg's own callers ask of the engine on this computer beyond the API's result (the server never does). */
export interface LocalOutputs {
  /** Make the mask file (EngineResult.mask); 'only': nothing else, the mask file is the result's data too. */
  mask?: 'beside' | 'only';
  /** The bytes a decoded photo (TIFF, AVIF) came from: read again for its 16 bits and ICC profile (layered-output.ts). */
  original?: Buffer;
}

/**
 * A photo the API does not take (HEIC, AVIF, TIFF), decoded on this computer for rmbg's own callers
 * (decode-input.ts): its limits checked, oriented, sRGB, 8 bits per channel, interleaved.
 */
export interface DecodedPhoto {
  pixels: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

export interface Engine {
  /** Where the model runs (the on-device engine; a test double may leave it out). */
  readonly device?: DeviceReport;
  /** The options it was created with (model, device, threads… by their rows' names): a batch reports them in force. */
  readonly options?: object;
  /** An API image's bytes or a decoded photo. Throws RmbgError (400 codes for bad input, 502 processing_failed otherwise). */
  cutOut(
    input: Buffer | DecodedPhoto,
    options: RemoveOptions,
    signal?: AbortSignal,
    local?: LocalOutputs,
  ): Promise<EngineResult>;
  /** Why the engine is broken (a run went past its limit), until a fresh worker has answered a run; else undefined. */
  broken?(): string | undefined;
  close(): Promise<void>;
}
