// `rmbg keys revoke <id>`: the key stops working at once (403 invalid_api_key); its account and credits stay.

import { RmbgError } from '../../api/errors.js';
import { EXIT } from '../exit-codes.js';
import { withLocalStore } from '../local-store.js';

interface KeysRevokeFlags {
  dataDir?: string;
  store?: string;
}

export async function run(opts: Record<string, unknown>, args: string[]): Promise<number> {
  const flags = opts as KeysRevokeFlags;
  const id = args[0] as string;
  const outcome = await withLocalStore(flags, async (store) => {
    const before = (await store.listKeys()).find((key) => key.id === id);
    return { before, after: await store.revokeKey(id) };
  });
  if (!outcome.after)
    throw new RmbgError('usage_error', `no API key has the id '${id}'; see \`rmbg keys list\` for ids`);
  if (outcome.before?.revokedAt != null) {
    process.stderr.write(
      `rmbg: key ${id} (${outcome.after.keyPrefix}…) was already revoked at ${new Date(outcome.before.revokedAt).toISOString()}\n`,
    );
  } else {
    process.stderr.write(
      `rmbg: revoked key ${id} (${outcome.after.keyPrefix}…) of account ${outcome.after.accountId}\n`,
    );
  }
  return EXIT.ok;
}
