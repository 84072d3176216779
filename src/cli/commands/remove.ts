// `rmbg remove`: wires flags to the batch (or to one stdin→stdout image), picks the renderer, handles
// Ctrl-C (first: finish files in flight and stop; second: cancel them) and returns the exit code.

import type { Command } from 'commander';
import { CALLER_DEFAULT_OPTIONS, parseRemoveOptions, type RemoveOptions } from '../../api/options.js';
import { policyOf, RmbgError, toRmbgError, messageOf } from '../../api/errors.js';
import { PHOTO_FORMATS_TEXT } from '../../api/media-types.js';
import { type DiscoveredInputs, discoverInputs, type InputItem } from '../../batch/discover-inputs.js';
import { passedOverLines } from '../render-passed-over.js';
import { batchRowsOf } from '../../batch/batch-rows.js';
import { refuseLocalOnly, type Remover } from '../../batch/remover.js';
import type { BatchEvent, BatchSummary } from '../../batch/batch-events.js';
import { batchEvents } from '../../batch/run-batch.js';
import { loadConfig, type Config } from '../../config/load-config.js';
import { secretOrStdin } from '../read-secret.js';
import { EXIT } from '../exit-codes.js';
import { reportError } from '../report-error.js';
import { jsonLinesRenderer } from '../render-json-lines.js';
import { createRemover, LOCAL_BY_DEFAULT_NOTE, type RemoveFlags, runsLocally } from '../create-remover.js';
import { settingFlags } from '../settings-flags.js';
import { REMOVE_TABLE } from '../../settings/index.js';
import { describeDevice } from '../../engine/runtime/device-report.js';
import { planBatch } from '../plan-batch.js';
import { offerToPull } from '../offer-pull.js';
import { engineOptionsOf } from '../../library/engine-settings.js';
import { recordTiming } from '../../engine/model/model-timings.js';
import { dataDirOf } from '../../config/setting-rules.js';
import { Journal } from '../../batch/journal.js';
import { isFlaggedRecord } from '../../batch/plan-item.js';
import { BATCH_SETTINGS } from '../../settings/remove.js';
import { resolve } from 'node:path';

/** Image options: flags the user typed > defaults in the settings file (`rmbg config set size hd`) > CLI defaults. */
function optionsFrom(command: Command, stored: Config['defaultFields']): RemoveOptions {
  const typed = (name: string) => command.getOptionValueSource(name) === 'cli';
  const values = command.opts();
  const fromFlags = {
    ...(typed('size') && { size: values.size }),
    ...(typed('format') && { format: values.format }),
    ...(typed('crop') && { crop: true }),
    ...(typed('bgColor') && { bg_color: values.bgColor }),
  };
  try {
    return parseRemoveOptions({ ...stored, ...fromFlags }, CALLER_DEFAULT_OPTIONS, 'local');
  } catch (error) {
    throw new RmbgError('usage_error', messageOf(error));
  }
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** --watch: the input folders to watch (files named on the command line are processed once). */
async function watchedFolders(inputs: string[], flags: RemoveFlags): Promise<string[]> {
  if (flags.dryRun || flags.confirmOver !== undefined) {
    throw new RmbgError(
      'usage_error',
      '--watch cannot be combined with --dry-run or --confirm-over: photos that land later cannot be counted in advance',
    );
  }
  const { foldersToWatch } = await import('../../batch/watch-inputs.js');
  return foldersToWatch(inputs);
}

function watchNote(folders: string[]): string {
  return `rmbg: watching ${folders.join(', ')} for new photos (Ctrl-C to stop after the photos in flight)`;
}

/** `rmbg remove -`: one image from stdin to stdout; messages go to stderr. */
async function removeStdin(remover: Remover, options: RemoveOptions, maskOnly: boolean): Promise<number> {
  if (process.stdout.isTTY)
    throw new RmbgError(
      'usage_error',
      'refusing to write image bytes to a terminal; redirect stdout (rmbg remove - … > out.png)',
    );
  const image = await readStdin();
  try {
    const result = await remover.remove(image, options, { filename: 'stdin', mask: maskOnly ? 'only' : undefined });
    const data = maskOnly ? (result.mask as Buffer) : result.data;
    await new Promise<void>((resolve, reject) =>
      process.stdout.write(data, (error) => (error ? reject(error) : resolve())),
    );
    return EXIT.ok;
  } catch (error) {
    reportError(toRmbgError(error), 'stdin');
    return EXIT.failed;
  }
}

/**
 * After a batch that stopped early, says why and how to resume on stderr: JSON lines carry it only in
 * fields a person may never look at. Out of credits, it asks the server for the balance (a GET, free).
 */
async function reportStop(
  summary: BatchSummary,
  context: { json: boolean; message: string | undefined; remover: Remover },
): Promise<void> {
  if (!summary.stoppedBy) return;
  const creditsLeft = policyOf(summary.stoppedBy).reportsBalance ? await context.remover.creditsLeft?.() : undefined;
  const { stopHint } = await import('../render-progress.js');
  if (context.json) process.stderr.write(`rmbg: ${stopHint(summary, { message: context.message, creditsLeft })}\n`);
  else if (creditsLeft !== undefined) process.stderr.write(`rmbg: the account has ${creditsLeft} credits left.\n`);
}

async function closeUnused(early: Promise<Remover> | undefined): Promise<void> {
  await early?.then(
    (remover) => remover.close(),
    () => undefined,
  );
}

/**
 * Makes `handler` the only listener of SIGINT and SIGTERM until the returned function restores the others.
 * They are set aside because one of them re-raises the signal: conf (through atomically's when-exit) hooks
 * every signal at import and calls process.kill(pid, signal), so one Ctrl-C would count as two and cancel
 * the files in flight. Its exit hook still runs, as the batch ends with a normal exit.
 */
function takeOverSignals(handler: () => void): () => void {
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const setAside = signals.map((signal) => ({
    signal,
    listeners: process.rawListeners(signal) as Array<(...args: unknown[]) => void>,
  }));
  for (const signal of signals) {
    process.removeAllListeners(signal);
    process.on(signal, handler);
  }
  return () => {
    for (const { signal, listeners } of setAside) {
      process.off(signal, handler);
      for (const listener of listeners) process.on(signal, listener);
    }
  };
}

/** Usage errors of the inputs themselves, before anything loads. */
function checkInputs(inputs: string[], flags: RemoveFlags): void {
  if (flags.retryReview && (flags.model === undefined || flags.watch || inputs.includes('-')))
    throw new RmbgError(
      'usage_error',
      "--retry-review runs the cutouts the output folder's journal flags again with another model: give " +
        '--model NAME and the same inputs and -o as the first run (not - or --watch)',
    );
  if (flags.apiKey === '-' && inputs.includes('-'))
    throw new RmbgError(
      'usage_error',
      "--api-key - and the input '-' both need stdin; give the key in RMBG_API_KEY instead",
    );
  if (flags.mask && inputs.includes('-'))
    throw new RmbgError(
      'usage_error',
      "--mask writes a second file, which stdout cannot hold: give --mask-only for the mask alone, or a file's path",
    );
  if (inputs.length > 1 && inputs.includes('-'))
    throw new RmbgError('usage_error', "'-' (stdin) cannot be combined with other inputs");
}

/** The images to process and the folders to watch; or, for --dry-run and a declined --confirm-over, the exit code.
 * `counted` hears how many photos were found (undefined with --watch) before the batch is planned. */
async function findInputs(
  inputs: string[],
  flags: RemoveFlags,
  options: RemoveOptions,
  counted: (photos: number | undefined) => void,
): Promise<(DiscoveredInputs & { watched: string[] }) | number> {
  const outDir = flags.outDir as string;
  const watched = flags.watch ? await watchedFolders(inputs, flags) : [];
  const found = await discoverInputs(inputs, {
    recursive: Boolean(flags.recursive),
    outputDir: outDir,
    rawPairs: flags.rawPairs,
  });
  const { items, ...passedOver } = found;
  counted(flags.watch ? undefined : items.length);
  if (items.length === 0 && !flags.watch)
    throw new RmbgError(
      'usage_error',
      `no images found in ${inputs.join(', ')} (${PHOTO_FORMATS_TEXT}${flags.recursive ? '' : '; add --recursive for subfolders'})` +
        passedOverLines(found)
          .map((line) => `; ${line}`)
          .join(''),
    );
  const planned = await planBatch({ flags: { ...flags, outDir }, items, passedOver, options });
  return planned ?? { ...found, watched };
}

/** What --retry-review is about to do, before it overwrites anything. */
function retryReviewNote(flags: RemoveFlags, items: InputItem[]): string {
  const below = flags.reviewBelow ?? BATCH_SETTINGS.reviewBelow.default;
  const records = Journal.readRecords(resolve(flags.outDir as string));
  const flagged = items.filter((item) => isFlaggedRecord(records.get(item.path), below)).length;
  return flagged === 0
    ? `--retry-review: the journal flags no cutout of these inputs (confidence under ${below}); nothing to run again`
    : `--retry-review: running the ${flagged} flagged cutout${flagged === 1 ? '' : 's'} (confidence under ` +
        `${below}) again with the model ${flags.model}, overwriting them; the others are left as they are`;
}

/** The exit code a finished batch means (see the command's help). */
function exitCodeOf(summary: BatchSummary, stopped: boolean, watch: boolean): number {
  // A watch ends with Ctrl-C: an interruption only when photos that had landed were left undone.
  if (stopped && (!watch || summary.stoppedBy === 'interrupted')) return EXIT.interrupted;
  // Files skipped because they failed before still have no output: a re-run must not report success.
  return summary.failed === 0 && summary.failedBefore === 0 && summary.notStarted === 0 ? EXIT.ok : EXIT.failed;
}

/** The batch over `items` (and, with --watch, the photos landing in `watched`), rendered; its exit code. */
async function runFolderBatch(
  remover: Remover,
  flags: RemoveFlags,
  options: RemoveOptions,
  { items, watched, ...passedOver }: DiscoveredInputs & { watched: string[] },
): Promise<number> {
  const outDir = flags.outDir as string;
  // A bar for a person at a terminal; JSON lines when stdout goes to a pipe or file (scripts, CI).
  const json = Boolean(flags.json) || !process.stdout.isTTY;
  // cli-progress and chokidar are imported only when they are used: a script's run does not wait for them.
  const progress = json ? undefined : (await import('../render-progress.js')).progressRenderer();
  const watchInputs = flags.watch ? (await import('../../batch/watch-inputs.js')).watchInputs : undefined;
  const render: (event: BatchEvent) => void = progress ?? jsonLinesRenderer();
  // Above the bar when there is one: a line written past it would leave a stale copy of the bar behind.
  const note = (text: string) => (progress ? progress.note(text) : process.stderr.write(`${text}\n`));
  const stop = new AbortController();
  const abort = new AbortController();
  const releaseSignals = takeOverSignals(() => {
    if (stop.signal.aborted) abort.abort();
    else {
      stop.abort();
      process.stderr.write('\nrmbg: stopping after the files in flight (Ctrl-C again to cancel them)…\n');
    }
  });
  try {
    const events = batchEvents({
      items,
      passedOver,
      ...batchRowsOf({ ...flags, outDir }, remover),
      options,
      remover,
      stop: stop.signal,
      abort: abort.signal,
      arrivals: watchInputs
        ? (ended) =>
            watchInputs(watched, ended, {
              recursive: Boolean(flags.recursive),
              outputDir: outDir,
              onReady: () => note(watchNote(watched)),
            })
        : undefined,
    });
    let summary: BatchSummary | undefined;
    const firstErrors = new Map<string, string>();
    for await (const event of events) {
      if (event.type === 'file' && event.error && !firstErrors.has(event.error.code))
        firstErrors.set(event.error.code, event.error.message);
      if (event.type === 'summary') summary = event;
      render(event);
    }
    if (!summary) throw new Error('the batch ended without a summary');
    // What this model costs here, for `rmbg models list`: the batch's wall time per processed photo.
    if (remover.device && summary.done > 0)
      recordTiming(dataDirOf(undefined), await modelNameOf(flags), remover.device.device, summary.ms, summary.done);
    const message = summary.stoppedBy ? firstErrors.get(summary.stoppedBy) : undefined;
    await reportStop(summary, { json, message, remover });
    return exitCodeOf(summary, stop.signal.aborted, Boolean(flags.watch));
  } finally {
    releaseSignals();
  }
}

/** The model a local run uses, by the name `rmbg models list` shows (a path stays a path). */
async function modelNameOf(flags: RemoveFlags): Promise<string> {
  const { readManifest } = await import('../../engine/model/model-registry.js');
  return engineOptionsOf(flags).model ?? readManifest().default;
}

export async function run(_opts: Record<string, unknown>, inputs: string[], command: Command): Promise<number> {
  const given = settingFlags(command, REMOVE_TABLE);
  checkInputs(inputs, given);
  const config = loadConfig({ apiUrl: given.apiUrl, apiKey: await secretOrStdin(given.apiKey, 'API key') });
  const local = runsLocally(given, config);
  if (local && !given.local) process.stderr.write(`${LOCAL_BY_DEFAULT_NOTE}\n`);
  const flags: RemoveFlags = { ...given, local };
  const options = optionsFrom(command, config.defaultFields);
  if (!local) refuseLocalOnly(options, flags.mask || flags.maskOnly);
  const stdinMode = inputs.length === 1 && inputs[0] === '-';
  if (local && !flags.dryRun) await offerToPull(engineOptionsOf(flags).model);

  // The model loads while the inputs are found (issue #9: most of a local start-up is the session's creation);
  // a dry run never needs it. If the command ends before the batch, it is closed once it has loaded.
  // Its device may depend on the job's size (auto: a GPU starts slower), known once the photos are found.
  let counted: (photos: number | undefined) => void = () => undefined;
  const photos = new Promise<number | undefined>((resolve) => (counted = resolve));
  const finding = stdinMode ? Promise.resolve({ items: [], watched: [] }) : findInputs(inputs, flags, options, counted);
  if (stdinMode) counted(1);
  finding.catch(() => counted(undefined)); // its error is reported when it is awaited below
  const early = local && !flags.dryRun ? createRemover(flags, config, photos) : undefined;
  early?.catch(() => undefined); // its error is reported when it is awaited below
  let found: Awaited<ReturnType<typeof findInputs>>;
  try {
    found = await finding;
  } catch (error) {
    await closeUnused(early);
    throw error;
  }
  if (typeof found === 'number') {
    await closeUnused(early);
    return found;
  }
  const remover = await (early ?? createRemover(flags, config));
  try {
    // Said once, before any bar: where the photos are processed, and why (auto picked it, or it was asked for).
    if (remover.device) process.stderr.write(`rmbg: the model is ${describeDevice(remover.device)}\n`);
    if (flags.retryReview && !stdinMode) process.stderr.write(`rmbg: ${retryReviewNote(flags, found.items)}\n`);
    return stdinMode
      ? await removeStdin(remover, options, Boolean(flags.maskOnly))
      : await runFolderBatch(remover, flags, options, found);
  } finally {
    await remover.close();
  }
}
