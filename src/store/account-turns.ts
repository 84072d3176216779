// One account's share of this server's connection pool: its charges lock the account's row, so they run one
// after the other in the database anyway; past ACCOUNT_SHARE at once they wait here, in memory, instead of each
// holding a pooled connection while it waits for the row, so one busy account cannot take the whole pool.

import { RmbgError } from '../api/errors.js';

/** Charges of one account in progress at once on this server (each holds a pooled connection). */
export const ACCOUNT_SHARE = 2;
/** How long a charge waits for its account's turn before 503 (as long as a row lock may be waited for). */
const TURN_WAIT_MS = 5000;

export class AccountTurns {
  readonly #accounts = new Map<string, { running: number; waiting: Array<() => void> }>();

  /** Runs `work` in its account's turn. */
  async run<T>(accountId: string, work: () => Promise<T>): Promise<T> {
    let account = this.#accounts.get(accountId);
    if (!account) {
      account = { running: 0, waiting: [] };
      this.#accounts.set(accountId, account);
    }
    if (account.running >= ACCOUNT_SHARE) await this.#wait(account);
    else account.running += 1;
    try {
      return await work();
    } finally {
      const next = account.waiting.shift();
      // The turn is handed over, so `running` stays counted; the last one out forgets the account.
      if (next) next();
      else if (--account.running === 0) this.#accounts.delete(accountId);
    }
  }

  #wait(account: { waiting: Array<() => void> }): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const turn = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        account.waiting.splice(account.waiting.indexOf(turn), 1);
        reject(
          new RmbgError(
            'service_unavailable',
            `the account's earlier requests still hold its balance (${ACCOUNT_SHARE} at once per server); retry shortly`,
            { retryAfterSeconds: 2 },
          ),
        );
      }, TURN_WAIT_MS);
      account.waiting.push(turn);
    });
  }
}
