// `rmbg account`: the credit balance of an API account (GET /v1.0/account) as text or the JSON record.

import { RmbgError } from '../../api/errors.js';
import { createApiClient, type ApiClient } from '../../client/api-client.js';
import type { RetryInfo } from '../../client/retry-policy.js';
import { loadConfig, requireSetting } from '../../config/load-config.js';
import { secretOrStdin } from '../read-secret.js';
import type { AccountRecord } from '../../api/wire-types.js';
import { EXIT } from '../exit-codes.js';
import { reportError } from '../report-error.js';

/** A balance query should answer quickly; the 180 s limit of the processing call is not needed here. */
const ACCOUNT_TIMEOUT_MS = 30_000;

interface AccountFlags {
  apiUrl?: string;
  apiKey?: string;
  json?: boolean;
}

export async function run(opts: Record<string, unknown>, _args: string[]): Promise<number> {
  const flags = opts as AccountFlags;
  let client: ApiClient;
  try {
    const config = loadConfig({ apiUrl: flags.apiUrl, apiKey: await secretOrStdin(flags.apiKey, 'API key') });
    client = createApiClient({
      baseUrl: requireSetting(config, 'apiUrl'),
      apiKey: requireSetting(config, 'apiKey'),
      timeoutMs: ACCOUNT_TIMEOUT_MS,
      onRetry: reportRetry,
    });
  } catch (error) {
    return fail(error);
  }
  try {
    const account = await client.getAccount();
    process.stdout.write(flags.json ? `${JSON.stringify(account)}\n` : formatBalance(account, client.baseUrl));
    return EXIT.ok;
  } catch (error) {
    return fail(error);
  }
}

function formatBalance(account: AccountRecord, baseUrl: string): string {
  const { total, subscription, payg } = account.data.attributes.credits;
  const rows: Array<[string, number]> = [
    ['total', total],
    ['subscription', subscription],
    ['pay-as-you-go', payg],
  ];
  const width = Math.max(...rows.map(([, n]) => String(n).length));
  return `Credits at ${baseUrl}\n${rows.map(([label, n]) => `  ${label.padEnd(14)}${String(n).padStart(width)}`).join('\n')}\n`;
}

function reportRetry(info: RetryInfo): void {
  process.stderr.write(
    `rmbg: ${info.reason}; retrying in ${(info.delayMs / 1000).toFixed(1)} s (attempt ${info.attempt + 1} of ${info.maxAttempts})\n`,
  );
}

/** Settings errors are usage errors (exit 2), the server's answers failures (1): the error table says which. */
function fail(error: unknown): number {
  if (!(error instanceof RmbgError)) throw error;
  return reportError(error);
}
