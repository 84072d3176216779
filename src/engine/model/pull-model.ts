// `rmbg models pull NAME`: a catalogue model downloaded into the user models folder. The bytes go to NAME.onnx.part
// (kept across interruptions and resumed with an HTTP Range request, If-Range so a changed file starts over), are
// checked against the publisher's pinned hash, and only then renamed into place and recorded with their sha256,
// which every later start checks like any model's. HTTPS_PROXY / HTTP_PROXY / NO_PROXY apply (undici's
// EnvHttpProxyAgent); --from takes a mirror's URL or a local folder instead of the publisher's URL.

import {
  closeSync,
  createReadStream,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EnvHttpProxyAgent, fetch } from 'undici';
import { RmbgError } from '../../api/errors.js';
import type { CatalogueModel } from './catalogue.js';
import { recordUserModel, type UserModelEntry } from './user-models.js';
import { fileDigests, stampVerified } from './weight-check.js';

export interface PullProgress {
  /** Bytes in the partial file so far (a resumed download starts above 0). */
  received: number;
  /** The whole file's size, when the source says it. */
  total: number | undefined;
  /** Bytes already there when this download began (resumed). */
  resumedFrom: number;
}

export interface PullOptions {
  /** A mirror's base URL (FILE is appended) or a local folder holding FILE. */
  from?: string;
  onProgress?: (progress: PullProgress) => void;
  signal?: AbortSignal;
}

/** What the partial file was downloaded from: a resume asks for the same version of the same URL. */
interface PartOrigin {
  url: string;
  validator?: string;
}

const partPathOf = (dir: string, model: CatalogueModel): string => join(dir, `${model.name}.onnx.part`);
const originPathOf = (part: string): string => `${part}.json`;

function readOrigin(part: string): PartOrigin | undefined {
  try {
    return JSON.parse(readFileSync(originPathOf(part), 'utf8')) as PartOrigin;
  } catch {
    return undefined;
  }
}

function discardPart(part: string): void {
  rmSync(part, { force: true });
  rmSync(originPathOf(part), { force: true });
}

const megabytes = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

/** Refuses before writing when the folder's file system has less free space than the bytes still to come. */
function checkFreeSpace(dir: string, needed: number): void {
  const { bavail, bsize } = statfsSync(dir);
  const free = bavail * bsize;
  if (needed > free)
    throw new RmbgError(
      'io_error',
      `not enough free space in ${dir} for the model: ${megabytes(needed)} needed, ${megabytes(free)} free`,
    );
}

/** The source's URL for this model: the publisher's, or the same file name under a mirror's base URL. */
const sourceUrl = (model: CatalogueModel, from: string | undefined): string =>
  from ? `${from.replace(/\/+$/, '')}/${encodeURIComponent(model.file)}` : model.url;

const isUrl = (from: string): boolean => /^https?:\/\//i.test(from);

async function copyFromFolder(model: CatalogueModel, folder: string, part: string, options: PullOptions) {
  const source = join(folder, model.file);
  if (!existsSync(source) || !statSync(source).isFile())
    throw new RmbgError('usage_error', `--from ${folder}: no file ${model.file} there`);
  const total = statSync(source).size;
  checkFreeSpace(join(part, '..'), total);
  discardPart(part);
  const read = createReadStream(source, {
    highWaterMark: 4 * 1024 * 1024,
    ...(options.signal && { signal: options.signal }),
  });
  await appendBody(read, part, { resumed: false, start: 0, total, options });
}

async function download(url: string, part: string, options: PullOptions, dispatcher: EnvHttpProxyAgent) {
  const origin = readOrigin(part);
  if (origin?.url !== url) discardPart(part);
  const have = existsSync(part) ? statSync(part).size : 0;
  const headers: Record<string, string> = { 'user-agent': 'rmbg-models-pull' };
  if (have > 0) {
    headers.range = `bytes=${have}-`;
    // The server sends the whole file (200) instead of the rest when it changed since the first part.
    if (origin?.validator) headers['if-range'] = origin.validator;
  }
  let response: Awaited<ReturnType<typeof fetch>>;
  try {
    response = await fetch(url, { headers, dispatcher, signal: options.signal ?? null });
  } catch (error) {
    const cause = (error as { cause?: Error }).cause?.message ?? (error as Error).message;
    throw new RmbgError('network_error', `cannot download ${url}: ${cause}`, { cause: error });
  }
  if (response.status === 416 && have > 0) {
    await response.body?.cancel();
    // The partial file is whole (an earlier pull stopped between its last byte and the check): check it as it is.
    if (/^bytes \*\/(\d+)$/.exec(response.headers.get('content-range') ?? '')?.[1] === String(have)) return;
    // Not a prefix of what the server has now: start over.
    discardPart(part);
    return download(url, part, options, dispatcher);
  }
  if (response.status !== 200 && response.status !== 206) {
    await response.body?.cancel();
    throw new RmbgError('network_error', `cannot download ${url}: HTTP ${response.status} ${response.statusText}`);
  }
  const length = Number(response.headers.get('content-length') ?? Number.NaN);
  const range = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(response.headers.get('content-range') ?? '');
  const resumed = response.status === 206 && Number(range?.[1]) === have;
  if (response.status === 206 && !resumed) {
    await response.body?.cancel();
    throw new RmbgError('network_error', `${url} answered a range other than bytes=${have}-`);
  }
  const start = resumed ? have : 0;
  const total = Number.isFinite(length) ? start + length : undefined;
  // Synchronous from here to the first read: a stream that breaks while nobody reads it drops what it had queued.
  if (total !== undefined) checkFreeSpace(join(part, '..'), total - start);
  const validator = response.headers.get('etag') ?? response.headers.get('last-modified') ?? undefined;
  writeFileSync(originPathOf(part), JSON.stringify({ url, ...(validator && { validator }) } satisfies PartOrigin));
  if (!response.body) throw new RmbgError('network_error', `${url} answered no body`);
  await appendBody(response.body, part, { resumed, start, total, options }).catch((error: unknown) => {
    if (options.signal?.aborted) throw error;
    throw new RmbgError(
      'network_error',
      `the download of ${url} broke off: ${(error as Error).message}; run the same command again to resume`,
      { cause: error },
    );
  });
  if (total !== undefined && statSync(part).size !== total)
    throw new RmbgError(
      'network_error',
      `the download of ${url} ended at ${statSync(part).size} of ${total} bytes; run the same command again to resume`,
    );
}

/** Writes each chunk as it arrives, so whatever came before a cut is kept in the partial file for the resume; reports
 * the progress of a download and of a copy from a folder alike. */
async function appendBody(
  body: AsyncIterable<Uint8Array>,
  part: string,
  {
    resumed,
    start,
    total,
    options,
  }: { resumed: boolean; start: number; total: number | undefined; options: PullOptions },
): Promise<void> {
  const file = openSync(part, resumed ? 'a' : 'w');
  let received = start;
  try {
    for await (const chunk of body) {
      writeSync(file, chunk);
      received += chunk.length;
      options.onProgress?.({ received, total, resumedFrom: start });
    }
    fsyncSync(file);
  } finally {
    closeSync(file);
  }
}

/** Downloads (or copies) the model into `dir`, checks the pinned hash, installs it atomically and records it. */
export async function pullModel(
  model: CatalogueModel,
  dir: string,
  options: PullOptions = {},
): Promise<UserModelEntry> {
  await mkdir(dir, { recursive: true });
  const part = partPathOf(dir, model);
  const from = options.from;
  const source = from && !isUrl(from) ? join(from, model.file) : sourceUrl(model, from);
  if (from && !isUrl(from)) await copyFromFolder(model, from, part, options);
  else await download(source, part, options, new EnvHttpProxyAgent());

  // One read for the publisher's pin and the sha256 every later start checks.
  const digests = await fileDigests(part, [...new Set([model.pin.algorithm, 'sha256' as const])]);
  const got = digests[model.pin.algorithm];
  if (got !== model.pin.hex.toLowerCase()) {
    discardPart(part);
    throw new RmbgError(
      'model_unavailable',
      `${model.name} from ${source} does not match its pinned ${model.pin.algorithm}: expected ${model.pin.hex}, ` +
        `got ${got}; nothing was installed and the partial download was removed`,
    );
  }
  const file = `${model.name}.onnx`;
  renameSync(part, join(dir, file));
  rmSync(originPathOf(part), { force: true });
  const { sha256 } = digests;
  stampVerified(join(dir, file), sha256);
  return recordUserModel(dir, {
    name: model.name,
    ...model.contract,
    preset: model.preset,
    file,
    bytes: statSync(join(dir, file)).size,
    sha256,
    addedFrom: source,
    pulled: { licence: model.licence, pin: `${model.pin.algorithm}:${model.pin.hex}`, version: model.version },
  });
}
