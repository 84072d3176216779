// A counted pool of places (bodies being read, image_url downloads): take one or be told it is full,
// never wait. Refusing at once keeps memory and sockets bounded; the caller answers 503 with Retry-After.

import { checkWholeNumber } from '../api/whole-number.js';

export class Slots {
  #taken = 0;

  /** `name`: the setting the size comes from, for the message of a wrong one. */
  constructor(
    readonly size: number,
    name: string,
  ) {
    checkWholeNumber(name, size, 1);
  }

  get taken(): number {
    return this.#taken;
  }

  /** A release function (idempotent), or undefined when every place is taken. */
  tryTake(): (() => void) | undefined {
    if (this.#taken >= this.size) return undefined;
    this.#taken += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#taken -= 1;
    };
  }
}
