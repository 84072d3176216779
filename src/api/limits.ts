// The API's fixed limits, stated once: every check, message and document takes its number and its text here.

export const LIMITS = {
  maxImageBytes: 22 * 1024 * 1024,
  /** A camera RAW read on this computer (never sent: it is developed or its preview read first); a 100 MP
   * camera's lossless RAW is about 200 MB. Its pixels are held to maxPixels like any photo's. */
  maxRawBytes: 256 * 1024 * 1024,
  minSide: 33,
  maxSide: 9999,
  maxPixels: 50_000_000,
  /** PNG output and format=auto are capped at this, whatever the size. */
  pngMaxPixels: 10_000_000,
  maxIdempotencyKeyLength: 128,
  replayWindowMs: 10 * 60 * 1000,
  /** A completed Idempotency-Key is remembered this long (its replay only for replayWindowMs); then it is free again. */
  idempotencyKeyRetentionMs: 24 * 60 * 60 * 1000,
  clientTimeoutMs: 180_000,
  /** Images in flight at once through a server, unless `concurrency` says: busy without tripping its rate limit. */
  remoteConcurrency: 4,
  /** On this computer, a model run unanswered this long fails its photo (rmbg serve: its processing timeout). */
  runTimeoutMs: 300_000,
  /** An image_url server that needs longer than this to deliver the image is broken (processing has its own limit). */
  imageUrlTimeoutMs: 30_000,
} as const;

/** The limits as people read them ("22 MiB", "50 MP", "10 minutes"), for messages and documents. */
export const LIMIT_TEXT = {
  maxImageBytes: `${LIMITS.maxImageBytes / 1024 / 1024} MiB`,
  maxRawBytes: `${LIMITS.maxRawBytes / 1024 / 1024} MiB`,
  maxPixels: `${LIMITS.maxPixels / 1_000_000} MP`,
  pngMaxPixels: `${LIMITS.pngMaxPixels / 1_000_000} MP`,
  replayWindow: `${LIMITS.replayWindowMs / 60_000} minutes`,
  idempotencyKeyRetention: `${LIMITS.idempotencyKeyRetentionMs / 3_600_000} hours`,
} as const;
