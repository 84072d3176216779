// --dry-run and --confirm-over: counts the images the batch would process (same planning as the batch
// itself) and, for a remote batch, the credits that would cost, and asks before spending more than allowed.

import { createInterface } from 'node:readline/promises';
import { resolve } from 'node:path';
import { canonicalOptions, type RemoveOptions } from '../api/options.js';
import type { InputItem } from '../batch/discover-inputs.js';
import { Journal } from '../batch/journal.js';
import { assignOutputSlots, type OutputSlot } from '../batch/output-paths.js';
import { planItem } from '../batch/plan-item.js';
import { EXIT } from './exit-codes.js';

interface PlanFlags {
  local?: boolean;
  output: string;
  overwrite?: boolean;
  retryFailed?: boolean;
  dryRun?: boolean;
  confirmOver?: number;
  json?: boolean;
}

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

async function ask(question: string): Promise<boolean> {
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
  options,
}: {
  flags: PlanFlags;
  items: InputItem[];
  options: RemoveOptions;
}): Promise<number | undefined> {
  if (!flags.dryRun && flags.confirmOver === undefined) return undefined;
  const outputDir = resolve(flags.output);
  const records = Journal.readRecords(outputDir);
  const slots = assignOutputSlots(items, outputDir, options.format);
  const optionsKey = canonicalOptions(options);
  const toSend = items.filter(
    (item) =>
      planItem(slots.get(item) as OutputSlot, records.get(item.path), optionsKey, {
        overwrite: Boolean(flags.overwrite),
        retryFailed: Boolean(flags.retryFailed),
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
    if (flags.json) {
      for (const item of toSend) process.stdout.write(`${JSON.stringify({ input: item.path, action: 'send' })}\n`);
      process.stdout.write(
        `${JSON.stringify({ summary: true, dryRun: true, toSend: toSend.length, skipped: items.length - toSend.length, credits, pricePerImage: price, priceKnown: known })}\n`,
      );
    } else {
      const [verb, done] = flags.local ? ['process', 'processed'] : ['send', 'sent'];
      for (const item of toSend) process.stdout.write(`would ${verb} ${item.path}\n`);
      process.stdout.write(
        `dry run: ${toSend.length} of ${items.length} images would be ${done}, ${credits} credits (${priceNote}); nothing was ${done}\n`,
      );
    }
    return EXIT.ok;
  }

  const limit = flags.confirmOver as number;
  if (credits <= limit) return undefined;
  const question = `This batch would send ${toSend.length} images for about ${credits} credits (${priceNote}), over --confirm-over ${limit}. Proceed? [y/N] `;
  if (!process.stdin.isTTY) {
    process.stderr.write(
      `rmbg: refusing: ${toSend.length} images would cost about ${credits} credits, over --confirm-over ${limit}, and there is no terminal to ask; raise --confirm-over to proceed\n`,
    );
    return EXIT.failed;
  }
  return (await ask(question)) ? undefined : EXIT.failed;
}
