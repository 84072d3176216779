// The service's own guard on the numbers it is built with (caps, pool sizes, the price): a programming error,
// not a user's, so a RangeError. Users' values are checked earlier, with their messages, by
// src/library/server-options.ts (SERVER_BOUNDS) and src/api/whole-number.ts.

export function assertWhole(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min)
    throw new RangeError(`${name} must be a whole number of at least ${min}; got ${value}`);
}
