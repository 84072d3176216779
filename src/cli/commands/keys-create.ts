// `rmbg keys create`: a new account with its first API key and an optional pay-as-you-go grant.
// The key is printed once (alone on stdout, so KEY=$(rmbg keys create) works); only its hash is stored.

import type { Command } from 'commander';
import { KEYS_CREATE_TABLE } from '../../settings/admin.js';
import { defaultsOf } from '../../settings/setting.js';
import { EXIT } from '../exit-codes.js';
import { withLocalStore } from '../local-store.js';
import { settingFlags } from '../settings-flags.js';

export async function run(_opts: Record<string, unknown>, _args: string[], command: Command): Promise<number> {
  const flags = { ...defaultsOf(KEYS_CREATE_TABLE), ...settingFlags(command, KEYS_CREATE_TABLE) };
  const { created, credits, path } = await withLocalStore(flags, async (store) => {
    const created = await store.createAccountWithKey({ plan: flags.plan, credits: flags.credits });
    return { created, credits: (await store.balance(created.accountId)).total, path: store.path };
  });
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ key: created.key, account: created.accountId, plan: created.plan, credits })}\n`,
    );
  } else {
    process.stdout.write(`${created.key}\n`);
    process.stderr.write(
      `rmbg: created key ${created.id} for account ${created.accountId} (plan ${created.plan}, ${credits} credits) in ${path}\n` +
        'rmbg: the key is shown only now; keep it in server-side configuration (e.g. RMBG_API_KEY)\n',
    );
  }
  if (created.plan === 'free') {
    process.stderr.write(
      "rmbg: warning: the free plan has no API access; this key's requests will get 403 plan_without_api_access\n",
    );
  }
  return EXIT.ok;
}
