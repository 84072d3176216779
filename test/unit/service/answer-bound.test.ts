// The answer bound on key lookups: a store that never answers (new connections that hang) costs each lookup at
// most its request's database budget, waiting for its turn included, then 503 service_unavailable with
// Retry-After; lookups already sent keep their turns until the store answers, so the stuck ones never take more.

import { expect, it } from 'vitest';
import { DatabaseBudget } from '../../../src/service/answer-bound.js';
import { KeyLookups } from '../../../src/service/key-lookups.js';
import { ValidKeys } from '../../../src/service/valid-keys.js';
import type { KeyOwner } from '../../../src/store/index.js';
import { rejectionOf } from '../../helpers/rejection.js';

const BUDGET_MS = 300;

it('lookups on a store that never answers: each one 503 with Retry-After within its budget, turns held meanwhile', async () => {
  const answers: Array<(owner: KeyOwner | undefined) => void> = [];
  const silent = {
    accountForKey: () => new Promise<KeyOwner | undefined>((resolve) => answers.push(resolve)),
  };
  const validKeys = new ValidKeys(
    { keyChangeCount: async () => 0, keysChangedSince: async () => [], activeKeyHashes: async () => [] },
    () => {},
  );
  const lookups = new KeyLookups(silent, validKeys, 2);

  const started = performance.now();
  // Two lookups take the turns and are sent; three more wait for a turn that never comes within their budget.
  const failures = await Promise.all(
    Array.from({ length: 5 }, (_, n) =>
      rejectionOf(lookups.authenticate(`rmbg_key_${n}`, new DatabaseBudget(BUDGET_MS))),
    ),
  );
  const waited = performance.now() - started;
  for (const failure of failures) {
    expect(failure.code).toBe('service_unavailable');
    expect(failure.retryAfterSeconds).toBeGreaterThan(0);
  }
  expect(waited).toBeLessThan(BUDGET_MS + 1000);
  // Only the two sent lookups reached the store: the waiting ones gave their turn up unsent.
  expect(answers).toHaveLength(2);

  // The store answers the stuck lookups at last: their turns come free, and the next lookup is sent and answered.
  for (const answer of answers) answer(undefined);
  const next = lookups.authenticate('rmbg_key_next', new DatabaseBudget(BUDGET_MS));
  await expect.poll(() => answers.length).toBe(3);
  answers[2]?.(undefined);
  expect((await rejectionOf(next)).code).toBe('invalid_api_key');
});
