// Concurrency that halves while the server says slow down (429/503) and creeps back after successes.

import type { LimitFunction } from 'p-limit';

export class AdaptiveConcurrency {
  private successes = 0;

  constructor(
    private readonly limit: LimitFunction,
    private readonly max: number,
  ) {}

  get current(): number {
    return this.limit.concurrency;
  }

  throttled(): void {
    this.limit.concurrency = Math.max(1, Math.floor(this.limit.concurrency / 2));
    this.successes = 0;
  }

  succeeded(): void {
    this.successes += 1;
    if (this.limit.concurrency < this.max && this.successes >= this.limit.concurrency * 4) {
      this.limit.concurrency += 1;
      this.successes = 0;
    }
  }
}
