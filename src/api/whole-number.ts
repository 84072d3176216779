// The one rule and message for a whole number within bounds: settings (flags such as --port, library and
// createServer() options, src/settings), command arguments, store URL parameters and the ledger's amounts.

import { type ErrorCode, RmbgError } from './errors.js';

/** `value` as a whole number from `min` to `max` (a string of digits counts), or an error of `code` naming `name`. */
export function checkWholeNumber(
  name: string,
  value: unknown,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
  code: ErrorCode = 'invalid_option',
): number {
  const n = typeof value === 'string' ? (/^\d{1,16}$/.test(value) ? Number(value) : Number.NaN) : value;
  if (typeof n === 'number' && Number.isSafeInteger(n) && n >= min && n <= max) return n;
  const got = typeof value === 'string' ? `'${value}'` : String(value);
  throw new RmbgError(
    code,
    `${name} must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? '' : ` to ${max}`}; got ${got}`,
  );
}
