// The RmbgError a call rejects with; fails the test when it resolves or rejects with anything else.

import { expect } from 'vitest';
import { RmbgError } from '../../src/api/errors.js';

export async function rejectionOf(promise: Promise<unknown>): Promise<RmbgError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(RmbgError);
    return error as RmbgError;
  }
  throw new Error('expected the call to fail');
}
