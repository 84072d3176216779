// --dry-run and --confirm-over: counts the images the batch would process (same planning as the batch
// itself) and, for a remote batch, the credits that would cost, and asks before spending more than allowed.

import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import { resolve } from 'node:path';
import { LIMIT_TEXT } from '../api/limits.js';
import {
  CONVERTIBLE_FORMATS,
  convertibleFormatOf,
  type ConvertibleFormat,
  RAW_FORMATS,
  type RawFormat,
} from '../api/media-types.js';
import type { PassedOver } from '../batch/discover-inputs.js';
import { rawKindOf } from '../engine/raw/raw-kind.js';
import { passedOverLines } from './render-passed-over.js';
import { canonicalOptions, type RemoveOptions } from '../api/options.js';
import type { InputItem } from '../batch/discover-inputs.js';
import { Journal } from '../batch/journal.js';
import { assignOutputSlots, type OutputSlot } from '../batch/output-paths.js';
import { planItem } from '../batch/plan-item.js';
import { maskOutputOf } from '../batch/batch-rows.js';
import type { RemoveFlags } from './create-remover.js';
import { EXIT } from './exit-codes.js';

/** The flags of `rmbg remove` the plan reads, by their rows' names (settings/remove.ts); outDir always has its default. */
type PlanFlags = Pick<
  RemoveFlags,
  | 'local'
  | 'overwrite'
  | 'retryFailed'
  | 'retryReview'
  | 'reviewBelow'
  | 'dryRun'
  | 'confirmOver'
  | 'json'
  | 'mask'
  | 'maskOnly'
> & {
  outDir: string;
};

/**
 * The API does not publish its price per image; the last charge this output folder's journal recorded
 * is the best estimate, else 1 credit (said so in the output).
 */
function pricePerImage(records: Map<string, { credits?: number; state: string }>): { price: number; known: boolean } {
  for (const record of [...records.values()].reverse()) {
    if (record.state === 'done' && record.credits && record.credits > 0) return { price: record.credits, known: true };
  }
  return { price: 1, known: false };
}

/** Through a server, the format a photo is converted from before upload (HEIC, AVIF, TIFF, a RAW), by its first
 * bytes (a RAW's IFDs lie in its first kilobytes). */
async function conversionOf(path: string): Promise<ConvertibleFormat | RawFormat | undefined> {
  const file = await open(path, 'r').catch(() => undefined);
  if (!file) return undefined; // unreadable: the batch itself reports it
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(HEADER_BYTES), 0, HEADER_BYTES, 0);
    const head = buffer.subarray(0, bytesRead);
    return rawKindOf(head) ?? convertibleFormatOf(head);
  } finally {
    await file.close();
  }
}

const HEADER_BYTES = 64 * 1024;

function formatName(format: ConvertibleFormat | RawFormat): string {
  return format in RAW_FORMATS
    ? RAW_FORMATS[format as RawFormat].name
    : CONVERTIBLE_FORMATS[format as ConvertibleFormat].name;
}

/** A yes/no question on the terminal; only "y" or "yes" is a yes. */
export async function ask(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/** Returns an exit code when the command should end here, undefined to go on with the batch. */
export async function planBatch({
  flags,
  items,
  passedOver = {},
  options,
}: {
  flags: PlanFlags;
  items: InputItem[];
  /** What finding the items passed over: said in the dry run's summary as in the batch's. */
  passedOver?: PassedOver;
  options: RemoveOptions;
}): Promise<number | undefined> {
  if (!flags.dryRun && flags.confirmOver === undefined) return undefined;
  const outputDir = resolve(flags.outDir);
  const records = Journal.readRecords(outputDir);
  const slots = assignOutputSlots(items, outputDir, options.format, maskOutputOf(flags));
  const optionsKey = canonicalOptions(options);
  const toSend = items.filter(
    (item) =>
      planItem(slots.get(item) as OutputSlot, records.get(item.path), optionsKey, {
        overwrite: Boolean(flags.overwrite),
        retryFailed: Boolean(flags.retryFailed),
        retryReview: Boolean(flags.retryReview),
        reviewBelow: flags.reviewBelow,
      }).action === 'send',
  );
  // --local costs nothing: a dry run still lists the work, --confirm-over never has anything to ask.
  const { price, known } = flags.local ? { price: 0, known: true } : pricePerImage(records);
  const credits = toSend.length * price;
  const priceNote = flags.local
    ? 'on this computer, no credits'
    : known
      ? `${price} credit(s) per image, as last charged`
      : 'assuming 1 credit per image (the API does not publish its price)';

  if (flags.dryRun) {
    // On this computer every format is decoded in place; only an upload needs an image the API takes.
    const conversions = await Promise.all(toSend.map((item) => (flags.local ? undefined : conversionOf(item.path))));
    if (flags.json) {
      toSend.forEach((item, i) => {
        const convert = conversions[i];
        process.stdout.write(`${JSON.stringify({ input: item.path, action: 'send', ...(convert && { convert }) })}\n`);
      });
      const skipped = items.length - toSend.length;
      const summary = { summary: true, dryRun: true, toSend: toSend.length, skipped, credits, ...passedOver };
      process.stdout.write(`${JSON.stringify({ ...summary, pricePerImage: price, priceKnown: known })}\n`);
    } else {
      const [verb, done] = flags.local ? ['process', 'processed'] : ['send', 'sent'];
      toSend.forEach((item, i) => {
        const convert = conversions[i];
        const note = convert
          ? ` (${formatName(convert)}: converted on this computer to PNG, or to JPEG if the PNG is over ${LIMIT_TEXT.maxImageBytes})`
          : '';
        process.stdout.write(`would ${verb} ${item.path}${note}\n`);
      });
      process.stdout.write(
        `dry run: ${toSend.length} of ${items.length} images would be ${done}, ${credits} credits (${priceNote}); nothing was ${done}\n`,
      );
      for (const line of passedOverLines(passedOver)) process.stdout.write(`${line}\n`);
    }
    return EXIT.ok;
  }

  const limit = flags.confirmOver as number;
  if (credits <= limit) return undefined;
  const question = `This batch would send ${toSend.length} images for about ${credits} credits (${priceNote}), over --confirm-over ${limit}. Proceed? [y/N] `;
  if (!process.stdin.isTTY) {
    process.stderr.write(
      `rmbg: refusing: ${toSend.length} images would cost about ${credits} credits, over --confirm-over ${limit}, ` +
        'and there is no terminal to ask; raise --confirm-over to proceed\n',
    );
    return EXIT.failed;
  }
  return (await ask(question)) ? undefined : EXIT.failed;
}
