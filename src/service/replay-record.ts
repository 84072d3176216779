// What an idempotent success keeps for its replay: the result bytes as the payload, and as metadata
// everything else the original response said (format, size, foreground box, confidence, credits charged).

import { RmbgError } from '../api/errors.js';
import { FORMATS, type OutputFormat } from '../api/options.js';
import type { StoredReplay } from '../store/index.js';
import type { ProcessedImage } from './types.js';

const OUTPUT_FORMATS: readonly string[] = FORMATS.filter((format) => format !== 'auto');

interface ReplayMetadata {
  format: OutputFormat;
  mimeType: string;
  width: number;
  height: number;
  foreground: ProcessedImage['foreground'];
  /** Absent from replays stored before confidences were kept. */
  confidence?: number;
  creditsCharged: number;
}

export function toStoredReplay(image: ProcessedImage, creditsCharged: number): StoredReplay {
  const metadata: ReplayMetadata = {
    format: image.format,
    mimeType: image.mimeType,
    width: image.width,
    height: image.height,
    foreground: { ...image.foreground },
    ...(image.confidence !== undefined && { confidence: image.confidence }),
    creditsCharged,
  };
  return { payload: image.data, metadata };
}

function isReplayMetadata(value: unknown): value is ReplayMetadata {
  const m = value as Partial<ReplayMetadata> | null;
  const box = m?.foreground;
  return (
    typeof m === 'object' &&
    m !== null &&
    OUTPUT_FORMATS.includes(m.format as string) &&
    typeof m.mimeType === 'string' &&
    Number.isInteger(m.width) &&
    Number.isInteger(m.height) &&
    Number.isInteger(m.creditsCharged) &&
    typeof box === 'object' &&
    box !== null &&
    (m.confidence === undefined || (typeof m.confidence === 'number' && m.confidence >= 0 && m.confidence <= 1)) &&
    [box.top, box.left, box.width, box.height].every(Number.isInteger)
  );
}

export function fromStoredReplay(replay: StoredReplay): { image: ProcessedImage; creditsCharged: number } {
  const metadata = replay.metadata;
  if (!isReplayMetadata(metadata)) {
    throw new RmbgError(
      'internal_error',
      'the stored replay of this Idempotency-Key is unreadable; use a new Idempotency-Key',
    );
  }
  const { creditsCharged, ...rest } = metadata;
  return { image: { ...rest, data: replay.payload }, creditsCharged };
}
