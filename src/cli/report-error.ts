// The one way a command tells the user it failed: `rmbg: [what: ]message (code)` on stderr, and the exit
// code the error table gives the error.

import { type ErrorCode, policyOf, type RmbgError } from '../api/errors.js';
import { EXIT } from './exit-codes.js';

/** How to fix an error with rmbg's own commands: the CLI's words, which the API and the library leave out. */
const FIX_WITH_COMMANDS: Partial<Record<ErrorCode, string>> = {
  insufficient_credits: 'add credits with `rmbg credits add`',
  missing_api_key: 'create a key with `rmbg keys create`',
};

/** The error's message followed by the command that fixes it, when rmbg has one. */
export function withFix(code: ErrorCode | null | undefined, message: string): string {
  const fix = code ? FIX_WITH_COMMANDS[code] : undefined;
  return fix ? `${message}; ${fix}` : message;
}

export function reportError(error: RmbgError, what?: string): number {
  process.stderr.write(`rmbg: ${what ? `${what}: ` : ''}${withFix(error.code, error.message)} (${error.code})\n`);
  return EXIT[policyOf(error.code).exit];
}
