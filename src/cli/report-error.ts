// The one way a command tells the user it failed: `rmbg: [what: ]message (code)` on stderr, and the exit
// code the error table gives the error.

import { policyOf, type RmbgError } from '../api/errors.js';
import { EXIT } from './exit-codes.js';

export function reportError(error: RmbgError, what?: string): number {
  process.stderr.write(`rmbg: ${what ? `${what}: ` : ''}${error.message} (${error.code})\n`);
  return EXIT[policyOf(error.code).exit];
}
