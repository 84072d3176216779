// `rmbg keys list`: the API keys of the local service by id and prefix, never the keys themselves.

import type { KeyInfo } from '../../store/index.js';
import { EXIT } from '../exit-codes.js';
import { withLocalStore } from '../local-store.js';

interface KeysListFlags {
  json?: boolean;
  dataDir?: string;
  store?: string;
}

const iso = (time: number | null) => (time === null ? null : new Date(time).toISOString());

function toJson(key: KeyInfo) {
  return {
    id: key.id,
    prefix: key.keyPrefix,
    account: key.accountId,
    plan: key.plan,
    created: iso(key.createdAt),
    revoked: iso(key.revokedAt),
  };
}

function table(keys: KeyInfo[]): string {
  const rows = [['ID', 'PREFIX', 'ACCOUNT', 'PLAN', 'CREATED', 'REVOKED']];
  for (const key of keys)
    rows.push([
      key.id,
      `${key.keyPrefix}…`,
      key.accountId,
      key.plan,
      iso(key.createdAt) as string,
      iso(key.revokedAt) ?? '-',
    ]);
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return `${rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

export async function run(opts: Record<string, unknown>, _args: string[]): Promise<number> {
  const flags = opts as KeysListFlags;
  const { keys, path } = await withLocalStore(flags, async (store) => ({
    keys: await store.listKeys(),
    path: store.path,
  }));
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(keys.map(toJson))}\n`);
  } else if (keys.length === 0) {
    process.stderr.write(`rmbg: no API keys in ${path}; create one with: rmbg keys create --credits 100\n`);
  } else {
    process.stdout.write(table(keys));
  }
  return EXIT.ok;
}
