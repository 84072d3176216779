// The flags of the local service's admin commands (`rmbg keys create`, `rmbg credits add`), besides the store's
// (dataDir, store: settings/server.ts). Flags of the CLI only: the library has no such functions.

import { SERVER_SETTINGS } from './server.js';
import { joinTables, type SettingsTable } from './setting.js';

/** Where the store is, for every command of the local service's store. */
export const STORE_SETTINGS = { dataDir: SERVER_SETTINGS.dataDir, store: SERVER_SETTINGS.store } as const;

export const KEYS_CREATE_SETTINGS = {
  credits: { type: 'whole', min: 0, default: 0, cliOnly: true, help: 'pay-as-you-go credits to grant' },
  plan: {
    type: 'choice',
    choices: ['pro', 'enterprise', 'free'],
    default: 'pro',
    cliOnly: true,
    help: 'plan of the account',
  },
  json: { type: 'switch', cliOnly: true, help: 'print {"key","account","plan","credits"}' },
} as const satisfies SettingsTable;

export const CREDITS_ADD_SETTINGS = {
  keyId: {
    type: 'text',
    placeholder: 'id',
    cliOnly: true,
    help: 'id of a key of the account (from `rmbg keys list`)',
  },
  key: {
    type: 'text',
    placeholder: 'key',
    cliOnly: true,
    help: 'API key of the account, or - to read it from stdin (env RMBG_API_KEY); a key on the command line shows in `ps` and shell history',
  },
  subscription: { type: 'switch', cliOnly: true, help: 'add subscription credits instead of pay-as-you-go' },
} as const satisfies SettingsTable;

export const KEYS_CREATE_TABLE = joinTables(KEYS_CREATE_SETTINGS, STORE_SETTINGS);
export const CREDITS_ADD_TABLE = joinTables(CREDITS_ADD_SETTINGS, STORE_SETTINGS);
