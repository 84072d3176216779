// `rmbg credits add <n> (--key-id ID | --key - | --key K | RMBG_API_KEY) [--subscription]`: grants credits to
// the account of a key, as one ledger row. By key id (from `rmbg keys list`) or from stdin / the environment,
// the key itself never needs to be on the command line.

import { checkWholeNumber } from '../../api/whole-number.js';
import { RmbgError } from '../../api/errors.js';
import type { Command } from 'commander';
import { CREDITS_ADD_TABLE } from '../../settings/admin.js';
import { EXIT } from '../exit-codes.js';
import { withLocalStore } from '../local-store.js';
import { secretOrStdin } from '../read-secret.js';
import { settingFlags } from '../settings-flags.js';

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

export async function run(_opts: Record<string, unknown>, args: string[], command: Command): Promise<number> {
  const flags = settingFlags(command, CREDITS_ADD_TABLE);
  const text = args[0] as string;
  const amount = checkWholeNumber('credits to add', text, 1, undefined, 'usage_error');
  const pool = flags.subscription ? 'subscription' : 'payg';
  if (flags.key !== undefined && flags.keyId !== undefined)
    throw new RmbgError('usage_error', 'give --key or --key-id, not both');
  const apiKey =
    flags.keyId === undefined
      ? ((await secretOrStdin(flags.key, 'API key')) ?? nonEmpty(process.env.RMBG_API_KEY))
      : undefined;
  if (flags.keyId === undefined && apiKey === undefined) {
    throw new RmbgError(
      'usage_error',
      'name the account: --key-id ID (from `rmbg keys list`), --key - (the key on stdin), or RMBG_API_KEY',
    );
  }
  const balance = await withLocalStore(flags, async (store) => {
    if (apiKey !== undefined) return store.addCredits({ apiKey }, amount, pool);
    const key = (await store.listKeys()).find((candidate) => candidate.id === flags.keyId);
    if (!key) throw new RmbgError('usage_error', `no API key has the id '${flags.keyId}'; see \`rmbg keys list\``);
    return store.addCredits({ accountId: key.accountId }, amount, pool);
  });
  process.stdout.write(
    `added ${amount} ${pool} credits; balance ${balance.total} (subscription ${balance.subscription}, payg ${balance.payg})\n`,
  );
  return EXIT.ok;
}
