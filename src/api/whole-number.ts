// The one rule and message for numeric settings (CLI flags such as --port and --concurrency, and the
// library's options of the same names): a whole number within bounds.

import { RmbgError } from './errors.js';

export function checkWholeNumber(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n === 'number' && Number.isInteger(n) && n >= min && n <= max) return n;
  const got = typeof value === 'string' ? `'${value}'` : String(value);
  throw new RmbgError(
    'invalid_option',
    `${name} must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? '' : ` to ${max}`}; got ${got}`,
  );
}
