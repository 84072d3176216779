// A counted pool of places (bodies being read, image_url downloads): take one or be told it is full,
// never wait. Refusing at once keeps memory and sockets bounded; the caller answers 503 with Retry-After.

export class Slots {
  #taken = 0;

  /** `size`: a row of src/settings (maxUploads, maxUrlFetches), checked against its bounds there. */
  constructor(readonly size: number) {}

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
