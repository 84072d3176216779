// `rmbg credits add <n> --key K [--subscription]`: grants credits to the account of a key, as one ledger row.

import { RmbgError } from '../../api/errors.js';
import { EXIT } from '../exit-codes.js';
import { withLocalStore } from '../local-store.js';

interface CreditsAddFlags {
  key: string;
  subscription?: boolean;
  dataDir?: string;
  store?: string;
}

export async function run(opts: Record<string, unknown>, args: string[]): Promise<number> {
  const flags = opts as unknown as CreditsAddFlags;
  const text = args[0] as string;
  const amount = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(amount) || amount < 1) {
    throw new RmbgError('usage_error', `credits to add must be a whole number of at least 1; got '${text}'`);
  }
  const pool = flags.subscription ? 'subscription' : 'payg';
  const balance = await withLocalStore(flags, (store) => store.addCredits({ apiKey: flags.key }, amount, pool));
  process.stdout.write(`added ${amount} ${pool} credits; balance ${balance.total} (subscription ${balance.subscription}, payg ${balance.payg})\n`);
  return EXIT.ok;
}
