// Where `rmbg serve` takes the /metrics bearer token from: --metrics-token, --metrics-token-file, or
// RMBG_METRICS_TOKEN. A token on the command line shows in `ps` to every user of the machine; the file and
// the environment do not.

import { readFileSync } from 'node:fs';
import { RmbgError, messageOf } from '../api/errors.js';
import { SERVER_SETTINGS } from '../settings/index.js';
import type { ServerOptions } from './server-options.js';

// Named in the library's words; the CLI shows them as its flags (cli/settings-flags.ts inFlagWords).
const TOKEN_OPTION = '`metricsToken`';
const FILE_OPTION = '`metricsTokenFile`';
const TOKEN_ENV = SERVER_SETTINGS.metricsToken.env;

/** The token, or undefined (loopback only). Throws usage_error for a token nobody could send. */
export function metricsTokenOf(
  options: Pick<ServerOptions, 'metricsToken' | 'metricsTokenFile'>,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (options.metricsToken !== undefined && options.metricsTokenFile !== undefined) {
    throw new RmbgError('usage_error', `give ${TOKEN_OPTION} or ${FILE_OPTION}, not both`);
  }
  if (options.metricsTokenFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.metricsTokenFile, 'utf8');
    } catch (error) {
      throw new RmbgError(
        'usage_error',
        `${FILE_OPTION}: cannot read ${options.metricsTokenFile} (${(error as NodeJS.ErrnoException).code ?? messageOf(error)})`,
        { cause: error },
      );
    }
    return checked(text.trim(), `${FILE_OPTION} ${options.metricsTokenFile}`);
  }
  if (options.metricsToken !== undefined) return checked(options.metricsToken, TOKEN_OPTION);
  // Empty counts as not set, as for the other RMBG_* variables.
  const fromEnv = env[TOKEN_ENV];
  return fromEnv === undefined || fromEnv === '' ? undefined : checked(fromEnv, TOKEN_ENV);
}

/** A token must fit in one `Authorization: Bearer <token>` header line. */
function checked(token: string, source: string): string {
  if (token.trim() === '') throw new RmbgError('usage_error', `${source}: the metrics token is empty`);
  if (/[\r\n]/.test(token))
    throw new RmbgError(
      'usage_error',
      `${source}: the metrics token holds more than one line; it must fit in an Authorization header`,
    );
  return token;
}
